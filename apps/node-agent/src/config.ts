// The agent's settings: flags, their environment variables and defaults in
// one table, which is also what --help prints.
import {
  ConfigError,
  DEFAULT_TOKEN_GRACE_MS,
  FLEET_TOKEN_ENV,
  hostPortFlag,
  LOGGING_FLAGS,
  messageOf,
  positiveDurations,
  type ConfigOf,
  type FlagsSpec,
  type HostPort,
} from '@warmpool/runtime';
import { KUBE_REQUEST_TIMEOUT_FLAG } from '@warmpool/kube';
import { DEFAULTS } from './agent.js';
import { parseSandboxdUrl } from './sandboxd/client.js';

export const FLAGS = {
  listen: {
    kind: 'string',
    description: 'Address to serve the agent API on (HOST:PORT)',
    env: 'AGENT_LISTEN',
    default: '0.0.0.0:7071',
  },
  sandboxdUrl: {
    kind: 'string',
    description:
      "This node's sandboxd: http://HOST:PORT or unix:/path/to/socket (default: sandboxd's own default listen, :7777, on loopback)",
    env: 'SANDBOXD_URL',
    default: 'http://127.0.0.1:7777',
  },
  tokenFile: {
    kind: 'string',
    description: `File holding the fleet API token (a mounted Secret; re-read when it changes). Else env ${FLEET_TOKEN_ENV}. Without a token every call but health/readiness/metrics answers 503`,
  },
  tokenGrace: {
    kind: 'duration',
    description:
      'After the token file changes, the replaced token is still accepted, and tried with sandboxd when it refuses the new one, this long',
    env: 'TOKEN_GRACE',
    default: DEFAULT_TOKEN_GRACE_MS,
  },
  nodeName: { kind: 'string', description: "This node's name, which the NodeInventory takes", env: 'NODE_NAME' },
  advertiseAddress: {
    kind: 'string',
    description:
      'HOST:PORT the control plane reaches this agent at (spec.address; default $POD_IP and the listen port)',
    env: 'ADVERTISE_ADDRESS',
  },
  kubeconfig: {
    kind: 'string',
    description: 'Kubeconfig file (default: $KUBECONFIG, else the in-cluster service account)',
  },
  kubeRequestTimeout: KUBE_REQUEST_TIMEOUT_FLAG,
  noInventory: {
    kind: 'boolean',
    description: 'Do not publish the NodeInventory: no Kubernetes access at all (local runs, benchmarks)',
    env: 'NO_INVENTORY',
    default: false,
  },
  publishInterval: {
    kind: 'duration',
    description: 'Publish the NodeInventory at least this often',
    env: 'PUBLISH_INTERVAL',
    default: DEFAULTS.publishIntervalMs,
  },
  minPublishGap: {
    kind: 'duration',
    description: 'Never write the NodeInventory twice within this gap (debounces significant changes)',
    env: 'MIN_PUBLISH_GAP',
    default: DEFAULTS.minPublishGapMs,
  },
  pollInterval: {
    kind: 'duration',
    description: "How often sandboxd's GET /v1/info is polled",
    env: 'POLL_INTERVAL',
    default: DEFAULTS.pollIntervalMs,
  },
  sandboxdTimeout: {
    kind: 'duration',
    description:
      'Deadline of every call to sandboxd, counted from when it is made (the wait for a connection included)',
    env: 'SANDBOXD_TIMEOUT',
    default: DEFAULTS.sandboxdTimeoutMs,
  },
  sandboxdClaimTimeout: {
    kind: 'duration',
    description: "Deadline of a claim at sandboxd (a cold boot takes up to sandboxd's 90 s cold window)",
    env: 'SANDBOXD_CLAIM_TIMEOUT',
    default: DEFAULTS.sandboxdClaimTimeoutMs,
  },
  sandboxdPoolsTimeout: {
    kind: 'duration',
    description: 'Deadline of PUT /v1/pools at sandboxd (it answers once the warm VMs it trims are destroyed)',
    env: 'SANDBOXD_POOLS_TIMEOUT',
    default: DEFAULTS.sandboxdPoolsTimeoutMs,
  },
  maxClaimsInFlight: {
    kind: 'number',
    description: 'Claims in flight to sandboxd at most; past it a claim answers 429 with Retry-After at once',
    env: 'MAX_CLAIMS_IN_FLIGHT',
    default: DEFAULTS.maxClaimsInFlight,
  },
  capacity: {
    kind: 'number',
    description: 'Sandboxes (warm + claimed) the node can hold, published as status.capacity (default: unknown)',
    env: 'NODE_CAPACITY',
  },
  drainDelay: {
    kind: 'duration',
    description: 'On SIGTERM, answer /readyz 503 and keep serving this long before the listener closes',
    env: 'DRAIN_DELAY',
    default: DEFAULTS.drainDelayMs,
  },
  shutdownTimeout: {
    kind: 'duration',
    description: 'On SIGTERM, after the drain delay, wait this long for requests in flight',
    env: 'SHUTDOWN_TIMEOUT',
    default: DEFAULTS.closeTimeoutMs,
  },
  ...LOGGING_FLAGS,
} satisfies FlagsSpec;

export type AgentConfig = ConfigOf<typeof FLAGS>;

export const SUMMARY = [
  "The warmpool node agent: serves the node's sandboxd API with the fleet token, a body limit and validation,",
  "refuses SetPools older than the last applied generation, and publishes this node's NodeInventory.",
].join('\n');

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '']);

/** Checks what can be checked before anything starts; every problem is a ConfigError naming the flag. */
export function validateConfig(config: AgentConfig): { listen: HostPort } {
  const listen = hostPortFlag('--listen', config.listen);
  try {
    parseSandboxdUrl(config.sandboxdUrl);
  } catch (err) {
    throw new ConfigError(`--sandboxd-url: ${messageOf(err)}`);
  }
  positiveDurations([
    ['--publish-interval', config.publishInterval],
    ['--poll-interval', config.pollInterval],
    ['--sandboxd-timeout', config.sandboxdTimeout],
    ['--sandboxd-claim-timeout', config.sandboxdClaimTimeout],
    ['--sandboxd-pools-timeout', config.sandboxdPoolsTimeout],
  ]);
  if (config.minPublishGap < 0) throw new ConfigError('--min-publish-gap must not be negative');
  if (config.tokenGrace < 0) throw new ConfigError('--token-grace must not be negative');
  if (config.drainDelay < 0) throw new ConfigError('--drain-delay must not be negative');
  if (!Number.isSafeInteger(config.maxClaimsInFlight) || config.maxClaimsInFlight < 1)
    throw new ConfigError('--max-claims-in-flight must be a positive integer');
  if (config.capacity !== undefined && (!Number.isInteger(config.capacity) || config.capacity < 0))
    throw new ConfigError('--capacity must be a non-negative integer');
  if (!config.noInventory && !config.nodeName)
    throw new ConfigError('--node-name (or NODE_NAME) is required to publish the NodeInventory');
  return { listen };
}

/**
 * spec.address: the flag when given, else $POD_IP with the listen port, else
 * the listen address itself when it names one host. A wildcard is no address.
 */
export function advertiseAddressOf(
  config: AgentConfig,
  listen: HostPort,
  env: NodeJS.ProcessEnv = process.env,
): string {
  if (config.advertiseAddress) {
    hostPortFlag('--advertise-address', config.advertiseAddress);
    return config.advertiseAddress;
  }
  const podIp = env['POD_IP'];
  if (podIp) return podIp.includes(':') ? `[${podIp}]:${listen.port}` : `${podIp}:${listen.port}`;
  if (!WILDCARD_HOSTS.has(listen.host))
    return listen.host.includes(':') ? `[${listen.host}]:${listen.port}` : `${listen.host}:${listen.port}`;
  throw new ConfigError(
    'cannot tell the advertise address: set --advertise-address, or POD_IP (from the downward API), or listen on one address',
  );
}
