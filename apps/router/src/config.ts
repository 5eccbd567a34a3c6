// The router's settings: flags, their environment variables and defaults in
// one table, which is also what --help prints.
import { DEFAULT_SANDBOX_PORT } from '@warmpool/api';
import { KUBE_REQUEST_TIMEOUT_FLAG } from '@warmpool/kube';
import {
  ConfigError,
  hostPortFlag,
  LOGGING_FLAGS,
  positiveDurations,
  type ConfigOf,
  type FlagsSpec,
  type HostPort,
} from '@warmpool/runtime';

export const SUMMARY =
  "The sandbox router: upstream agent-sandbox's router API (POST /execute, POST /upload, GET /download|list|exists/{path} with X-Sandbox-ID/-Namespace/-Port) in front of every SandboxClaim's sandbox. Callers are authenticated with a TokenReview and authorized per Sandbox with a SubjectAccessReview; calls are forwarded to the sandbox's node with the sandbox's own token.";

export const FLAGS = {
  listen: {
    kind: 'string',
    description: "Address to serve on (HOST:PORT); upstream's clients port-forward to the router Service's 8080",
    env: 'ROUTER_LISTEN',
    default: '0.0.0.0:8080',
  },
  kubeconfig: {
    kind: 'string',
    description: 'Kubeconfig file (default: $KUBECONFIG, else the in-cluster service account)',
  },
  kubeRequestTimeout: KUBE_REQUEST_TIMEOUT_FLAG,
  runtimePort: {
    kind: 'number',
    description: 'The one X-Sandbox-Port taken (a warmpool sandbox serves one runtime); others answer 400',
    env: 'ROUTER_RUNTIME_PORT',
    default: DEFAULT_SANDBOX_PORT,
  },
  tokenlessUser: {
    kind: 'string',
    description:
      'Review a request without any credential as this user (SubjectAccessReview per Sandbox, as for a token); unset = such requests are 401',
    env: 'ROUTER_TOKENLESS_USER',
  },
  proxyTimeout: {
    kind: 'duration',
    description: 'The longest one proxied call may take (X-Sandbox-Timeout may ask for less)',
    env: 'ROUTER_PROXY_TIMEOUT',
    default: 180_000,
  },
  routeCacheTtl: {
    kind: 'duration',
    description: "How long a Sandbox's route (from its Secret and the Sandbox API) is reused",
    env: 'ROUTER_ROUTE_CACHE_TTL',
    default: 2_000,
  },
  reviewCacheTtl: {
    kind: 'duration',
    description: 'How long a TokenReview or SubjectAccessReview decision is reused (at most 10s)',
    env: 'ROUTER_REVIEW_CACHE_TTL',
    default: 10_000,
  },
  shutdownTimeout: {
    kind: 'duration',
    description: 'On SIGTERM, how long calls in flight may still run before they are cut',
    env: 'ROUTER_SHUTDOWN_TIMEOUT',
    default: 30_000,
  },
  ...LOGGING_FLAGS,
} satisfies FlagsSpec;

export type RouterConfig = ConfigOf<typeof FLAGS>;

export function validateConfig(config: RouterConfig): { listen: HostPort } {
  const listen = hostPortFlag('--listen', config.listen);
  if (!Number.isInteger(config.runtimePort) || config.runtimePort < 1 || config.runtimePort > 65535)
    throw new ConfigError(`--runtime-port: must be a port (1..65535), got ${config.runtimePort}`);
  positiveDurations([
    ['--proxy-timeout', config.proxyTimeout],
    ['--shutdown-timeout', config.shutdownTimeout],
  ]);
  if (config.routeCacheTtl < 0) throw new ConfigError('--route-cache-ttl: must not be negative');
  if (config.reviewCacheTtl < 0 || config.reviewCacheTtl > 10_000)
    throw new ConfigError('--review-cache-ttl: must be 0..10s');
  if (config.tokenlessUser !== undefined && config.tokenlessUser.trim() === '')
    throw new ConfigError('--tokenless-user: must not be empty');
  return { listen };
}
