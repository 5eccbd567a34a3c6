// The control plane's settings: flags, their environment variables and
// defaults in one table, which is also what --help prints. The chart
// (charts/warmpool/templates/control-plane.yaml) passes these names.
import { existsSync, readFileSync } from 'node:fs';
import { ConfigError, DEFAULT_TOKEN_GRACE_MS, formatDuration, messageOf, parseHostPort, type ConfigOf, type FlagsSpec, type HostPort } from '@warmpool/runtime';
import { DEFAULT_LEASE_NAME } from './control-plane.js';
import { DRIVER_DEFAULTS } from './controllers/warmpool/options.js';

export const TOKEN_ENV = 'WARMPOOL_API_TOKEN';

export const FLAGS = {
  listen: { kind: 'string', description: 'Address to serve /healthz, /readyz and /metrics on (HOST:PORT)', env: 'CONTROL_PLANE_LISTEN', default: '0.0.0.0:8080' },
  tokenFile: { kind: 'string', description: `File holding the fleet API token (a mounted Secret; re-read when it changes). Else env ${TOKEN_ENV}. Without a token nothing is pushed and /readyz fails`, env: 'TOKEN_FILE' },
  tokenGrace: { kind: 'duration', description: 'After the token file changes, the replaced token is still tried with an agent that refuses the new one, this long', env: 'TOKEN_GRACE', default: DEFAULT_TOKEN_GRACE_MS },
  interval: { kind: 'duration', description: 'Periodic reconcile, which also samples every node\'s warm counts for status', env: 'RECONCILE_INTERVAL', default: DRIVER_DEFAULTS.intervalMs },
  staleAfter: { kind: 'duration', description: 'A node whose NodeInventory was not republished for this long leaves placement', env: 'STALE_AFTER', default: DRIVER_DEFAULTS.staleAfterMs },
  setPoolsTimeout: { kind: 'duration', description: 'Timeout of each SetPools (and probe) attempt to a node agent', env: 'SET_POOLS_TIMEOUT', default: 2_000 },
  setPoolsConcurrency: { kind: 'number', description: 'SetPools / probe calls in flight at once, fleet-wide', env: 'SET_POOLS_CONCURRENCY', default: DRIVER_DEFAULTS.agentCallConcurrency },
  setPoolsAttempts: { kind: 'number', description: 'Attempts per SetPools call (retries back off exponentially, with jitter)', env: 'SET_POOLS_ATTEMPTS', default: 3 },
  failureThreshold: { kind: 'number', description: 'Consecutive failed calls to an agent before its node leaves placement', env: 'NODE_FAILURE_THRESHOLD', default: DRIVER_DEFAULTS.failureThreshold },
  leaseDuration: { kind: 'duration', description: 'Leader election: how long a standby waits, from the last renewal it saw, before taking the lease', env: 'LEASE_DURATION', default: 15_000 },
  renewDeadline: { kind: 'duration', description: 'Leader election: the leader steps down if it cannot renew for this long', env: 'RENEW_DEADLINE', default: 10_000 },
  retryPeriod: { kind: 'duration', description: 'Leader election: between attempts to acquire or renew', env: 'RETRY_PERIOD', default: 2_000 },
  leaseName: { kind: 'string', description: 'The election Lease, which also carries the generation epoch', env: 'LEASE_NAME', default: DEFAULT_LEASE_NAME },
  namespace: { kind: 'string', description: 'Namespace of the election Lease (default: the pod\'s own, else "default")', env: 'POD_NAMESPACE' },
  agentPodSelector: { kind: 'string', description: 'Label selector of the node agents\' pods in --namespace: an agent advertising its pod IP is called only at the IP of such a pod on its node. Without it only the Node\'s status.addresses vouch for an agent', env: 'AGENT_POD_SELECTOR' },
  identity: { kind: 'string', description: 'This replica\'s identity in the Lease (default: hostname-pid)', env: 'POD_NAME' },
  kubeconfig: { kind: 'string', description: 'Kubeconfig file (default: $KUBECONFIG, else the in-cluster service account)' },
  logLevel: { kind: 'string', description: 'debug | info | warn | error', env: 'LOG_LEVEL', default: 'info' },
  redisUrl: { kind: 'string', description: 'Redis for provisioning batches (accepted; not yet implemented)', env: 'REDIS_URL' },
  clusterId: { kind: 'string', description: 'This cluster\'s id for federation (accepted; not yet implemented)', env: 'CLUSTER_ID' },
  federationRedisUrl: { kind: 'string', description: 'The shared federation hub (accepted; not yet implemented)', env: 'FEDERATION_REDIS_URL' },
  shutdownTimeout: { kind: 'duration', description: 'On SIGTERM, give up waiting for a clean stop after this long', env: 'SHUTDOWN_TIMEOUT', default: 20_000 },
} satisfies FlagsSpec;

export type ControlPlaneConfig = ConfigOf<typeof FLAGS>;

export const SUMMARY = [
  'The warmpool control plane: drives every node\'s warm pools from SandboxWarmPool objects (one global, coalescing',
  'reconcile; SetPools to each node agent with a generation that only grows), writes pool status, and elects one',
  'leader on a Lease.',
].join('\n');

const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

export interface ValidatedConfig {
  listen: HostPort;
  namespace: string;
}

/** Checks what can be checked before anything starts; every problem is a ConfigError naming the flag. */
export function validateConfig(config: ControlPlaneConfig, readNamespaceFile: () => string | undefined = defaultNamespaceFile): ValidatedConfig {
  let listen: HostPort;
  try {
    listen = parseHostPort(config.listen);
  } catch (err) {
    throw new ConfigError(`--listen: ${messageOf(err)}`);
  }
  const positive: Array<[string, number]> = [
    ['--interval', config.interval], ['--stale-after', config.staleAfter], ['--set-pools-timeout', config.setPoolsTimeout],
    ['--lease-duration', config.leaseDuration], ['--renew-deadline', config.renewDeadline], ['--retry-period', config.retryPeriod],
    ['--shutdown-timeout', config.shutdownTimeout],
  ];
  for (const [flag, ms] of positive) if (!(ms > 0)) throw new ConfigError(`${flag} must be positive (got ${formatDuration(ms)})`);
  const counts: Array<[string, number]> = [
    ['--set-pools-concurrency', config.setPoolsConcurrency], ['--set-pools-attempts', config.setPoolsAttempts], ['--failure-threshold', config.failureThreshold],
  ];
  for (const [flag, n] of counts) if (!Number.isInteger(n) || n < 1) throw new ConfigError(`${flag} must be a whole number of at least 1 (got ${n})`);
  if (config.leaseDuration <= config.renewDeadline) throw new ConfigError('--lease-duration must be greater than --renew-deadline');
  if (config.renewDeadline <= 1.2 * config.retryPeriod) throw new ConfigError('--renew-deadline must be greater than 1.2 × --retry-period');
  if (config.staleAfter <= config.interval) throw new ConfigError('--stale-after must be greater than --interval');
  if (!config.leaseName) throw new ConfigError('--lease-name must not be empty');
  const namespace = config.namespace || readNamespaceFile() || 'default';
  return { listen, namespace };
}

function defaultNamespaceFile(): string | undefined {
  if (!existsSync(SERVICE_ACCOUNT_NAMESPACE)) return undefined;
  return readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim() || undefined;
}
