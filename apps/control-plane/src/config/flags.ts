// The control plane's flags: each with its environment variable and default
// in one table, which is also what --help prints. The chart
// (charts/warmpool/templates/control-plane.yaml) passes these names.
import { DEFAULT_BATCH_OPTIONS } from '@warmpool/batcher';
import { KUBE_REQUEST_TIMEOUT_FLAG } from '@warmpool/kube';
import {
  DEFAULT_TOKEN_GRACE_MS,
  FLEET_TOKEN_ENV,
  LOGGING_FLAGS,
  type ConfigOf,
  type FlagsSpec,
} from '@warmpool/runtime';
import { DEFAULT_PUSH_TIMEOUT_MS } from '../agents/client.js';
import { SANDBOX_CLAIM_DEFAULTS } from '../controllers/sandboxclaims/controller.js';
import { JANITOR_DEFAULTS } from '../controllers/sandboxclaims/janitor.js';
import { AUTOSCALER_DEFAULTS } from '../controllers/sandboxenvs/autoscaler.js';
import { DRIVER_DEFAULTS } from '../controllers/warmpool/options.js';
import { FEDERATION_DEFAULTS } from '../federation/federation.js';
import { PROVISIONING_DEFAULTS } from '../provisioning/options.js';
import { DEFAULT_REDIS_TIMEOUT_MS } from '../redis/dead-peer.js';
import { DEFAULT_LEASE_NAME } from './settings.js';

export const PEERS_FILE_HINT =
  "List the peers, their claim API URLs and tokens in --federation-peers-file (each cluster's file lists the others)";

export const FLAGS = {
  metricsBindAddress: {
    kind: 'string',
    description: 'Address to serve /metrics on (HOST:PORT), with /healthz and /readyz too',
    env: 'METRICS_BIND_ADDRESS',
    envAliases: ['CONTROL_PLANE_LISTEN'],
    aliases: ['listen'],
    default: '0.0.0.0:8080',
  },
  healthProbeBindAddress: {
    kind: 'string',
    description:
      'A separate address for /healthz and /readyz only (HOST:PORT; default: none, the metrics address serves them)',
    env: 'HEALTH_PROBE_BIND_ADDRESS',
  },
  stallTimeout: {
    kind: 'duration',
    description:
      '/healthz fails when, while leading, no reconcile finished for this long (a wedged loop; the kubelet then restarts the pod)',
    env: 'STALL_TIMEOUT',
    default: 120_000,
  },
  tokenFile: {
    kind: 'string',
    description: `File holding the fleet API token (a mounted Secret; re-read when it changes). Else env ${FLEET_TOKEN_ENV}. Without a token nothing is pushed and /readyz fails`,
    env: 'TOKEN_FILE',
  },
  tokenGrace: {
    kind: 'duration',
    description:
      'After the token file changes, the replaced token is still tried with an agent that refuses the new one, this long',
    env: 'TOKEN_GRACE',
    default: DEFAULT_TOKEN_GRACE_MS,
  },
  interval: {
    kind: 'duration',
    description: "Periodic reconcile, which also samples every node's warm counts for status",
    env: 'RECONCILE_INTERVAL',
    default: DRIVER_DEFAULTS.intervalMs,
  },
  staleAfter: {
    kind: 'duration',
    description: 'A node whose NodeInventory was not republished for this long leaves placement',
    env: 'STALE_AFTER',
    default: DRIVER_DEFAULTS.staleAfterMs,
  },
  setPoolsTimeout: {
    kind: 'duration',
    description: 'Timeout of each probe (GET /v1/info) attempt to a node agent',
    env: 'SET_POOLS_TIMEOUT',
    default: 2_000,
  },
  setPoolsPushTimeout: {
    kind: 'duration',
    description:
      'Timeout of each SetPools push to a node agent (a real sandboxd answers once the VMs it trims are gone); a push that timed out is not resent before the next reconcile',
    env: 'SET_POOLS_PUSH_TIMEOUT',
    default: DEFAULT_PUSH_TIMEOUT_MS,
  },
  setPoolsConcurrency: {
    kind: 'number',
    description: 'SetPools / probe calls in flight at once, fleet-wide',
    env: 'SET_POOLS_CONCURRENCY',
    default: DRIVER_DEFAULTS.agentCallConcurrency,
  },
  setPoolsAttempts: {
    kind: 'number',
    description: 'Attempts per SetPools call (retries back off exponentially, with jitter)',
    env: 'SET_POOLS_ATTEMPTS',
    default: 3,
  },
  failureThreshold: {
    kind: 'number',
    description: 'Consecutive failed calls to an agent before its node leaves placement',
    env: 'NODE_FAILURE_THRESHOLD',
    default: DRIVER_DEFAULTS.failureThreshold,
  },
  leaderElect: {
    kind: 'boolean',
    description: 'Elect one leader on a Lease; false drives at once (only ever run one replica then)',
    env: 'LEADER_ELECT',
    default: true,
  },
  leaderElectLeaseDuration: {
    kind: 'duration',
    description: 'Leader election: how long a standby waits, from the last renewal it saw, before taking the lease',
    env: 'LEADER_ELECT_LEASE_DURATION',
    envAliases: ['LEASE_DURATION'],
    aliases: ['lease-duration'],
    default: 15_000,
  },
  leaderElectRenewDeadline: {
    kind: 'duration',
    description: 'Leader election: the leader steps down if it cannot renew for this long',
    env: 'LEADER_ELECT_RENEW_DEADLINE',
    envAliases: ['RENEW_DEADLINE'],
    aliases: ['renew-deadline'],
    default: 10_000,
  },
  leaderElectRetryPeriod: {
    kind: 'duration',
    description: 'Leader election: between attempts to acquire or renew',
    env: 'LEADER_ELECT_RETRY_PERIOD',
    envAliases: ['RETRY_PERIOD'],
    aliases: ['retry-period'],
    default: 2_000,
  },
  leaderElectResourceName: {
    kind: 'string',
    description: 'The election Lease, which also carries the generation epoch',
    env: 'LEADER_ELECT_RESOURCE_NAME',
    envAliases: ['LEASE_NAME'],
    aliases: ['lease-name'],
    default: DEFAULT_LEASE_NAME,
  },
  namespace: {
    kind: 'string',
    description: 'Namespace of the election Lease (default: the pod\'s own, else "default")',
    env: 'POD_NAMESPACE',
  },
  agentPodSelector: {
    kind: 'string',
    description:
      "Label selector of the node agents' pods in --namespace: an agent advertising its pod IP is called only at the IP of such a pod on its node. Without it only the Node's status.addresses vouch for an agent",
    env: 'AGENT_POD_SELECTOR',
  },
  identity: {
    kind: 'string',
    description: "This replica's identity in the Lease (default: hostname-pid)",
    env: 'POD_NAME',
  },
  kubeconfig: {
    kind: 'string',
    description: 'Kubeconfig file (default: $KUBECONFIG, else the in-cluster service account)',
  },
  kubeRequestTimeout: KUBE_REQUEST_TIMEOUT_FLAG,
  ...LOGGING_FLAGS,
  redisUrl: {
    kind: 'string',
    description:
      'Redis for claims (batch jobs, the claim index, reply lists; maxmemory-policy must be noeviction). When set, every replica serves the claim API on --claims-listen and runs batch workers',
    env: 'REDIS_URL',
  },
  redisPasswordFile: {
    kind: 'string',
    description:
      "File holding the password of --redis-url's Redis (its requirepass, or the URL's ACL user's; a mounted Secret, read at start). Not together with a password in the URL",
    env: 'REDIS_PASSWORD_FILE',
  },
  redisCaFile: {
    kind: 'string',
    description:
      "PEM file of the CA that signed the certificate of --redis-url's Redis (a rediss:// URL only; default: the system's CAs)",
    env: 'REDIS_CA_FILE',
  },
  redisTimeout: {
    kind: 'duration',
    description:
      "How long a command waits for --redis-url's Redis: then it fails, and a connection that got no answer for this long is made anew (a Redis stopped or behind a partition holds nothing longer). A blocking read waits its block on top (BullMQ's worker: up to 10 s more). Also bounds connecting and each question to a Sentinel",
    env: 'REDIS_TIMEOUT',
    default: DEFAULT_REDIS_TIMEOUT_MS,
  },
  redisSentinels: {
    kind: 'string',
    description:
      "Find --redis-url's primary through Redis Sentinel: the Sentinels' addresses, comma-separated HOST:PORT. The URL's host and port are then not dialed; its scheme (rediss:// = TLS to the Sentinels and the primary), user and db still count. Needs --redis-sentinel-master",
    env: 'REDIS_SENTINELS',
  },
  redisSentinelMaster: {
    kind: 'string',
    description:
      "The primary's name in the Sentinels' configuration (sentinel monitor <name> …); with --redis-sentinels",
    env: 'REDIS_SENTINEL_MASTER',
  },
  redisSentinelPasswordFile: {
    kind: 'string',
    description:
      "File holding the Sentinels' own password (their requirepass), when they have one; with --redis-sentinels",
    env: 'REDIS_SENTINEL_PASSWORD_FILE',
  },
  claimsListen: {
    kind: 'string',
    description: 'Address of the HTTP claim API (HOST:PORT); served only with --redis-url',
    env: 'CLAIMS_LISTEN',
    default: '0.0.0.0:8081',
  },
  claimsTlsCertFile: {
    kind: 'string',
    description: 'Serve the claim API over TLS with this certificate (PEM); needs --claims-tls-key-file',
    env: 'CLAIMS_TLS_CERT_FILE',
  },
  claimsTlsKeyFile: {
    kind: 'string',
    description: 'The key of --claims-tls-cert-file (PEM)',
    env: 'CLAIMS_TLS_KEY_FILE',
  },
  claimBatchIdle: {
    kind: 'duration',
    description:
      "While none of its batches is out, a pool's claim batch closes after this long without a new claim (0: at the end of the event-loop turn); while one is out, claims wait for its answer (at most the max duration)",
    env: 'CLAIM_BATCH_IDLE',
    default: PROVISIONING_DEFAULTS.batcher.idleMs,
  },
  claimBatchRejoin: {
    kind: 'duration',
    description:
      "When a pool's batch out is answered, the claims held behind it wait up to this long for as many new claims as it answered (its callers asking again), and go as soon as that many came, so one batch carries both; after a gap in which fewer than half came, not until claims come again within a gap of an answer (0: they go at once)",
    env: 'CLAIM_BATCH_REJOIN',
    default: PROVISIONING_DEFAULTS.batchRejoinMs,
  },
  claimBatchMax: {
    kind: 'duration',
    description: 'A claim batch closes after this long at the latest',
    env: 'CLAIM_BATCH_MAX',
    default: DEFAULT_BATCH_OPTIONS.maxDurationMs,
  },
  claimBatchMaxItems: {
    kind: 'number',
    description: 'A claim batch closes once it holds this many claims',
    env: 'CLAIM_BATCH_MAX_ITEMS',
    default: DEFAULT_BATCH_OPTIONS.maxItems,
  },
  claimTimeout: {
    kind: 'duration',
    description: 'A claim not answered within this long fails Timeout (HTTP 504)',
    env: 'CLAIM_TIMEOUT',
    default: PROVISIONING_DEFAULTS.claimTimeoutMs,
  },
  claimWorkerConcurrency: {
    kind: 'number',
    description: "Batch jobs this replica's worker serves at once",
    env: 'CLAIM_WORKER_CONCURRENCY',
    default: PROVISIONING_DEFAULTS.workerConcurrency,
  },
  claimLockDuration: {
    kind: 'duration',
    description:
      "A worker's lock on a batch job; a dead worker's job is served elsewhere about this plus --claim-stalled-interval later",
    env: 'CLAIM_LOCK_DURATION',
    default: PROVISIONING_DEFAULTS.lockDurationMs,
  },
  claimStalledInterval: {
    kind: 'duration',
    description: 'How often workers look for batch jobs whose worker died',
    env: 'CLAIM_STALLED_INTERVAL',
    default: PROVISIONING_DEFAULTS.stalledIntervalMs,
  },
  claimNodeTimeout: {
    kind: 'duration',
    description: 'Timeout of each claim call to a node agent',
    env: 'CLAIM_NODE_TIMEOUT',
    default: PROVISIONING_DEFAULTS.nodeTimeoutMs,
  },
  claimColdNodeTimeout: {
    kind: 'duration',
    description:
      "Timeout of a claim placed where no warm stock is (a cold boot takes up to sandboxd's 90 s), and how long a node whose claim call timed out may still serve it (looked up by claim_ref until then, never claimed elsewhere)",
    env: 'CLAIM_COLD_NODE_TIMEOUT',
    default: PROVISIONING_DEFAULTS.coldNodeTimeoutMs,
  },
  claimAttempts: {
    kind: 'number',
    description: 'Nodes asked per claim before it fails',
    env: 'CLAIM_ATTEMPTS',
    default: PROVISIONING_DEFAULTS.maxAttempts,
  },
  sandboxclaimLease: {
    kind: 'duration',
    description:
      'Lease of the sandbox of a SandboxClaim without spec.lifecycle.shutdownTime, renewed at half by the leader (at most 24h)',
    env: 'SANDBOXCLAIM_LEASE',
    default: SANDBOX_CLAIM_DEFAULTS.leaseSeconds * 1000,
  },
  claimJanitorInterval: {
    kind: 'duration',
    description: "The leader's sweep of node claims whose SandboxClaim no longer exists runs this often",
    env: 'CLAIM_JANITOR_INTERVAL',
    default: JANITOR_DEFAULTS.intervalMs,
  },
  claimJanitorGrace: {
    kind: 'duration',
    description: 'The janitor never releases a node claim younger than this',
    env: 'CLAIM_JANITOR_GRACE',
    default: JANITOR_DEFAULTS.graceMs,
  },
  envScaleDownDelay: {
    kind: 'duration',
    description: 'SandboxEnv autoscaler: no scale-down of a group until this long after its last scale-up (hysteresis)',
    env: 'ENV_SCALE_DOWN_DELAY',
    default: AUTOSCALER_DEFAULTS.scaleDownDelayMs,
  },
  clusterId: {
    kind: 'string',
    description:
      "This cluster's id for federation: with --federation-redis-url, the cluster shares its SandboxEnv capacity with the others and spills Env claims to them",
    env: 'CLUSTER_ID',
  },
  federationRedisUrl: {
    kind: 'string',
    description:
      'The Redis hub shared by the federated clusters (records are keys with TTLs). Federation runs only with --cluster-id too',
    env: 'FEDERATION_REDIS_URL',
  },
  federationRedisPasswordFile: {
    kind: 'string',
    description:
      'File holding the password of the federation hub (--federation-redis-url; a mounted Secret, read at start). Not together with a password in the URL',
    env: 'FEDERATION_REDIS_PASSWORD_FILE',
  },
  federationRedisCaFile: {
    kind: 'string',
    description:
      "PEM file of the CA that signed the federation hub's certificate (a rediss:// --federation-redis-url only; default: the system's CAs)",
    env: 'FEDERATION_REDIS_CA_FILE',
  },
  federationRedisTimeout: {
    kind: 'duration',
    description:
      'How long a command waits for the federation hub (--federation-redis-url): then it fails, and a connection that got no answer for this long is made anew',
    env: 'FEDERATION_REDIS_TIMEOUT',
    default: DEFAULT_REDIS_TIMEOUT_MS,
  },
  federationInterval: {
    kind: 'duration',
    description:
      "Federation: how often the leader reports this cluster's capacity and every replica re-reads the others'",
    env: 'FEDERATION_INTERVAL',
    default: FEDERATION_DEFAULTS.intervalMs,
  },
  federationTtl: {
    kind: 'duration',
    description: 'Federation: how long a reported record lives (default 3 × --federation-interval)',
    env: 'FEDERATION_TTL',
  },
  federationPrefix: {
    kind: 'string',
    description: 'Federation: key prefix on the hub (every federated cluster must use the same)',
    env: 'FEDERATION_PREFIX',
    default: FEDERATION_DEFAULTS.prefix,
  },
  federationPeersFile: {
    kind: 'string',
    description:
      'Federation: JSON file listing the peer clusters, each with its own credentials: {"peers": [{"id", "claimsUrl", "tokenFile", "acceptedTokenFile"}]} (claimsUrl + tokenFile: Env claims are forwarded to that peer\'s claim API, presenting that token; acceptedTokenFile: the token that peer presents here). It and its token files are re-read when they change; a replaced token stays good for --token-grace. Without it no claim spills and none is accepted from a peer',
    env: 'FEDERATION_PEERS_FILE',
  },
  federationTokenFile: {
    kind: 'string',
    description: `Removed: one token shared by every cluster let any holder act on every claim. Each peer has its own token now: ${PEERS_FILE_HINT}. Given, the control plane does not start`,
    env: 'FEDERATION_TOKEN_FILE',
  },
  claimsAdvertiseUrl: {
    kind: 'string',
    description: `Removed: where a peer's claim API is reached is no longer read from the hub (anyone who can write to it could redirect claims and tokens). ${PEERS_FILE_HINT}. Given, the control plane does not start`,
    env: 'CLAIMS_ADVERTISE_URL',
  },
  aggregatedListen: {
    kind: 'string',
    description:
      'Serve the Sandbox API (agents.x-k8s.io/v1beta1 sandboxes, behind the APIService v1beta1.agents.x-k8s.io) over TLS on this address (HOST:PORT); off when empty',
    env: 'AGGREGATED_LISTEN',
    default: '',
  },
  aggregatedTlsCertFile: {
    kind: 'string',
    description:
      "The Sandbox API's serving certificate (PEM); without it a self-signed one is made at start (the APIService must then skip TLS verification)",
    env: 'AGGREGATED_TLS_CERT_FILE',
  },
  aggregatedTlsKeyFile: {
    kind: 'string',
    description: 'The key of --aggregated-tls-cert-file (PEM)',
    env: 'AGGREGATED_TLS_KEY_FILE',
  },
  aggregatedTlsSans: {
    kind: 'string',
    description:
      "Comma-separated extra DNS names of the self-signed certificate (e.g. the Service's <name>.<namespace>.svc)",
    env: 'AGGREGATED_TLS_SANS',
    default: '',
  },
  shutdownTimeout: {
    kind: 'duration',
    description: 'On SIGTERM, give up waiting for a clean stop after this long',
    env: 'SHUTDOWN_TIMEOUT',
    default: 20_000,
  },
} satisfies FlagsSpec;

export type ControlPlaneConfig = ConfigOf<typeof FLAGS>;

export const SUMMARY = [
  "The warmpool control plane: drives every node's warm pools from SandboxWarmPool objects (one global, coalescing",
  'reconcile; SetPools to each node agent with a generation that only grows), writes pool status, and elects one',
  'leader on a Lease. Writes SandboxEnv status and autoscales Env groups; with --redis-url serves the claim API; with',
  '--cluster-id and --federation-redis-url shares Env capacity with other clusters and spills Env claims to them.',
].join('\n');
