// fake-sandboxd as a process: one fake node behind the sandboxd HTTP contract.
import {
  ConfigError,
  DEFAULT_TOKEN_GRACE_MS,
  formatHostPort,
  hostPortFlag,
  LOGGING_FLAGS,
  normalizeToken,
  runProcess,
  Shutdown,
  type ProcessContext,
  type FlagsSpec,
  type HostPort,
  type HttpServer,
  type SocketServer,
} from '@warmpool/runtime';
import { DEFAULT_OPTIONS } from './core/options.js';
import { RUNTIME_DEFAULTS } from './core/runtime/runtimes.js';
import { startFakeSandboxd, type RunningFakeSandboxd } from './start.js';
import { parseRedirectPeers, parseTenants } from './variant-flags.js';

const FLAGS = {
  listen: {
    kind: 'string',
    description: 'Where to serve the sandboxd API: HOST:PORT, or unix:/path/to/socket (as the real sandboxd)',
    env: 'SANDBOXD_LISTEN',
    // The real daemon's default listen address: every interface, port 7777.
    default: ':7777',
  },
  apiToken: {
    kind: 'string',
    description:
      'Root bearer token; empty (and no --api-token-file, no --tenants) = accept unauthenticated calls, like the real daemon',
    env: 'SANDBOXD_API_TOKEN',
  },
  apiTokenFile: {
    kind: 'string',
    description:
      'File holding the root bearer token (a mounted Secret; re-read when it changes; wins over --api-token)',
    env: 'SANDBOXD_API_TOKEN_FILE',
  },
  tokenGrace: {
    kind: 'duration',
    description: 'After --api-token-file changes, the replaced token is still root this long',
    env: 'SANDBOXD_TOKEN_GRACE',
    default: DEFAULT_TOKEN_GRACE_MS,
  },
  maxClaims: {
    kind: 'number',
    description: 'Live claims before new claims answer 429',
    env: 'SANDBOXD_MAX_CLAIMS',
    default: DEFAULT_OPTIONS.maxClaims,
  },
  room: {
    kind: 'number',
    description: 'Sandboxes the node can hold: warm + claimed + booting',
    env: 'SANDBOXD_ROOM',
    default: DEFAULT_OPTIONS.room,
  },
  refillRate: {
    kind: 'number',
    description: 'Refill boots started per second, node-wide',
    env: 'SANDBOXD_REFILL_RATE',
    default: DEFAULT_OPTIONS.refillRate,
  },
  refillConcurrency: {
    kind: 'number',
    description: 'Refill boots in flight at once',
    env: 'SANDBOXD_REFILL_CONCURRENCY',
    default: DEFAULT_OPTIONS.refillConcurrency,
  },
  warmClaimMs: {
    kind: 'duration',
    description: 'Added latency of a warm claim',
    env: 'SANDBOXD_WARM_CLAIM_MS',
    default: DEFAULT_OPTIONS.warmClaimLatencyMs,
  },
  coldBootMs: {
    kind: 'duration',
    description: 'Latency of a cold claim, and of each refill boot unless --boot-ms',
    env: 'SANDBOXD_COLD_BOOT_MS',
    default: DEFAULT_OPTIONS.coldBootMs,
  },
  cloneMs: {
    kind: 'duration',
    description:
      'Latency of a warm miss on a key whose golden image is ready (a clone; the real daemon allows 15s) (default: --cold-boot-ms)',
    env: 'SANDBOXD_CLONE_MS',
  },
  trimMsPerVm: {
    kind: 'duration',
    description:
      'How long destroying one trimmed warm VM takes; PUT /v1/pools answers once they are gone (the real daemon allows 120s per VM)',
    env: 'SANDBOXD_TRIM_MS_PER_VM',
    default: 0,
  },
  bootMs: {
    kind: 'duration',
    description: 'Duration of one refill boot (default: --cold-boot-ms)',
    env: 'SANDBOXD_BOOT_MS',
  },
  defaultTtl: {
    kind: 'duration',
    description: 'Lease of a claim asking for ttl_seconds 0 or none',
    env: 'SANDBOXD_DEFAULT_TTL',
    default: DEFAULT_OPTIONS.defaultTtlSeconds * 1000,
  },
  bootFailureRate: {
    kind: 'number',
    description: 'Probability that a boot fails (0..1)',
    env: 'SANDBOXD_BOOT_FAILURE_RATE',
    default: 0,
  },
  claimFailureRate: {
    kind: 'number',
    description: 'Probability that a claim answers 500 (0..1)',
    env: 'SANDBOXD_CLAIM_FAILURE_RATE',
    default: 0,
  },
  advertise: {
    kind: 'string',
    description: 'owner_addr in claim answers (default: the bound listen address)',
    env: 'SANDBOXD_ADVERTISE',
  },
  unadvertised: {
    kind: 'boolean',
    description: 'No advertise address: claim answers carry no owner_addr',
    env: 'SANDBOXD_UNADVERTISED',
    default: false,
  },
  clientAdvertise: {
    kind: 'string',
    description: "A full http(s) origin given as owner_addr instead (the daemon's client_advertise)",
    env: 'SANDBOXD_CLIENT_ADVERTISE',
  },
  egressAttachment: {
    kind: 'boolean',
    description: 'The node has an egress attachment; without it, net=egress claims and pools answer 409',
    env: 'SANDBOXD_EGRESS_ATTACHMENT',
    default: false,
  },
  redirectPeers: {
    kind: 'string',
    description:
      'Mesh mode: HOST:PORT,... a claim is redirected to on a warm miss, at max claims or draining, unless no_redirect',
    env: 'SANDBOXD_REDIRECT_PEERS',
  },
  tenants: {
    kind: 'string',
    description: 'Tenant tokens NAME=TOKEN,...: tenants claim and list their own; operator surfaces answer them 403',
    env: 'SANDBOXD_TENANTS',
  },
  omitClaimedAt: {
    kind: 'boolean',
    description: 'Rows carry no claimed_at (claims recorded before the field existed)',
    env: 'SANDBOXD_OMIT_CLAIMED_AT',
    default: false,
  },
  olderDaemon: {
    kind: 'boolean',
    description: 'An older daemon: GET /v1/sandboxes ignores ?claim_ref=, and renew is an unknown route (404)',
    env: 'SANDBOXD_OLDER_DAEMON',
    default: false,
  },
  execTimeout: {
    kind: 'duration',
    description:
      'A simulated command still running after this long is stopped (exit 1, as upstream runtime answers a timeout)',
    env: 'SANDBOXD_EXEC_TIMEOUT',
    default: RUNTIME_DEFAULTS.execTimeoutMs,
  },
  noRuntime: {
    kind: 'boolean',
    description: 'Do not serve the sandbox runtime routes (/v1/sandboxes/{id}/runtime/...)',
    env: 'SANDBOXD_NO_RUNTIME',
    default: false,
  },
  ...LOGGING_FLAGS,
} satisfies FlagsSpec;

const SUMMARY =
  'A faithful stand-in for the node-local sandbox daemon (sandboxd): warm pools, claims, leases, drain. State is in memory only.';

/** fake-sandboxd's process: parsed flags and logger in, one serving fake node out. */
async function main({ config, logger }: ProcessContext<typeof FLAGS>): Promise<void> {
  const listen = parseListen(config.listen);
  if (config.unadvertised && (config.advertise !== undefined || config.clientAdvertise !== undefined))
    throw new ConfigError('--unadvertised: not with --advertise or --client-advertise');
  const tenants = parseTenants(config.tenants);
  const redirectPeers = parseRedirectPeers(config.redirectPeers);
  const shutdown = new Shutdown({ logger });
  const options = {
    apiToken: config.apiToken,
    ...(config.apiTokenFile !== undefined ? { apiTokenFile: config.apiTokenFile } : {}),
    tokenGraceMs: config.tokenGrace,
    logger,
    maxClaims: config.maxClaims,
    room: config.room,
    refillRate: config.refillRate,
    refillConcurrency: config.refillConcurrency,
    warmClaimLatencyMs: config.warmClaimMs,
    coldBootMs: config.coldBootMs,
    cloneMs: config.cloneMs,
    trimMsPerVm: config.trimMsPerVm,
    bootMs: config.bootMs,
    defaultTtlSeconds: config.defaultTtl / 1000,
    bootFailureRate: config.bootFailureRate,
    claimFailureRate: config.claimFailureRate,
    advertise: config.unadvertised ? (false as const) : config.advertise,
    ...(config.clientAdvertise !== undefined ? { clientAdvertise: config.clientAdvertise } : {}),
    egressAttachment: config.egressAttachment,
    redirectPeers,
    ...(tenants !== undefined ? { tenants } : {}),
    omitClaimedAt: config.omitClaimedAt,
    olderDaemon: config.olderDaemon,
    runtime: config.noRuntime ? (false as const) : { execTimeoutMs: config.execTimeout },
  };
  const node: RunningFakeSandboxd<HttpServer | SocketServer> =
    'socketPath' in listen
      ? await startFakeSandboxd({ ...options, socketPath: listen.socketPath })
      : await startFakeSandboxd({ ...options, host: listen.host, port: listen.port });
  shutdown.add('fake-sandboxd', node);
  if (config.apiTokenFile === undefined && normalizeToken(config.apiToken) === undefined && tenants === undefined)
    logger.warn('no --api-token, --api-token-file or --tenants: every caller is treated as root');
  const address = 'address' in node.server ? formatHostPort(node.server.address) : node.server.url;
  logger.info('serving', { address, advertise: node.core.advertise });
}

/** `HOST:PORT`, or `unix:/path` for a unix socket (the node agent's `--sandboxd-url` takes the same form). */
function parseListen(text: string): HostPort | { socketPath: string } {
  if (text.startsWith('unix:')) {
    const socketPath = text.slice('unix:'.length);
    if (!socketPath.startsWith('/'))
      throw new ConfigError(`--listen: invalid socket "${text}" (want unix:/absolute/path)`);
    return { socketPath };
  }
  return hostPortFlag('--listen', text);
}

// Its options check ranges with RangeError: a bad flag value, too.
runProcess(
  { name: 'fake-sandboxd', summary: SUMMARY, flags: FLAGS, moduleUrl: import.meta.url, usageErrors: [RangeError] },
  main,
);
