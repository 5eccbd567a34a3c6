// Flags to settings, once: every check that can be made before anything
// starts, each problem a ConfigError naming the flag, and the result in the
// one shape createControlPlane reads (config/settings.ts).
import { existsSync, readFileSync } from 'node:fs';
import { MAX_CLAIM_TTL_SECONDS } from '@warmpool/api';
import {
  ConfigError,
  countsOfAtLeastOne,
  formatDuration,
  hostPortFlag,
  pairedFiles,
  positiveDurations,
} from '@warmpool/runtime';
import { FEDERATION_DEFAULTS } from '../federation/federation.js';
import { PEERS_FILE_HINT, type ControlPlaneConfig } from './flags.js';
import { noRedisFlagsWithoutUrl, redisSettingsOf, type RedisFlags } from './redis-flags.js';
import type { ClaimsSettings, ControlPlaneSettings, FederationSettings, SandboxApiSettings } from './settings.js';

const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** The settings, plus where the federation peers are listed (the process reads that file). */
export type ValidatedConfig = ControlPlaneSettings & {
  listen: NonNullable<ControlPlaneSettings['listen']>;
  namespace: string;
  federation: FederationSettings & { peersFile?: string };
};

export function validateConfig(
  config: ControlPlaneConfig,
  readNamespaceFile: () => string | undefined = defaultNamespaceFile,
): ValidatedConfig {
  checkTimings(config);
  const claims = validateClaims(config);
  const sandboxApi = validateSandboxApi(config);
  const probeListen = config.healthProbeBindAddress
    ? hostPortFlag('--health-probe-bind-address', config.healthProbeBindAddress)
    : undefined;
  return {
    listen: hostPortFlag('--metrics-bind-address', config.metricsBindAddress),
    ...(probeListen !== undefined ? { probeListen } : {}),
    namespace: config.namespace || readNamespaceFile() || 'default',
    ...(config.identity ? { identity: config.identity } : {}),
    leaderElection: config.leaderElect,
    leaseName: config.leaderElectResourceName,
    leaseDurationMs: config.leaderElectLeaseDuration,
    renewDeadlineMs: config.leaderElectRenewDeadline,
    retryPeriodMs: config.leaderElectRetryPeriod,
    ...(config.agentPodSelector ? { agentPodSelector: config.agentPodSelector } : {}),
    driver: {
      intervalMs: config.interval,
      staleAfterMs: config.staleAfter,
      agentCallConcurrency: config.setPoolsConcurrency,
      failureThreshold: config.failureThreshold,
    },
    setPools: {
      timeoutMs: config.setPoolsTimeout,
      pushTimeoutMs: config.setPoolsPushTimeout,
      attempts: config.setPoolsAttempts,
    },
    stallTimeoutMs: config.stallTimeout,
    envScaleDownDelayMs: config.envScaleDownDelay,
    federation: validateFederation(config),
    ...(claims !== undefined ? { claims } : {}),
    sandboxClaims: {
      controller: { leaseSeconds: Math.ceil(config.sandboxclaimLease / 1000) },
      janitor: { intervalMs: config.claimJanitorInterval, graceMs: config.claimJanitorGrace },
    },
    ...(sandboxApi !== undefined ? { sandboxApi } : {}),
  };
}

function checkTimings(config: ControlPlaneConfig): void {
  positiveDurations([
    ['--interval', config.interval],
    ['--stale-after', config.staleAfter],
    ['--set-pools-timeout', config.setPoolsTimeout],
    ['--set-pools-push-timeout', config.setPoolsPushTimeout],
    ['--leader-elect-lease-duration', config.leaderElectLeaseDuration],
    ['--leader-elect-renew-deadline', config.leaderElectRenewDeadline],
    ['--leader-elect-retry-period', config.leaderElectRetryPeriod],
    ['--shutdown-timeout', config.shutdownTimeout],
    ['--stall-timeout', config.stallTimeout],
    ['--claim-janitor-interval', config.claimJanitorInterval],
    ['--claim-janitor-grace', config.claimJanitorGrace],
  ]);
  countsOfAtLeastOne([
    ['--set-pools-concurrency', config.setPoolsConcurrency],
    ['--set-pools-attempts', config.setPoolsAttempts],
    ['--failure-threshold', config.failureThreshold],
  ]);
  if (!(config.sandboxclaimLease >= 2_000 && config.sandboxclaimLease <= MAX_CLAIM_TTL_SECONDS * 1000))
    throw new ConfigError(
      `--sandboxclaim-lease must be between 2s and 24h (got ${formatDuration(config.sandboxclaimLease)})`,
    );
  if (config.leaderElectLeaseDuration <= config.leaderElectRenewDeadline)
    throw new ConfigError('--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline');
  if (config.leaderElectRenewDeadline <= 1.2 * config.leaderElectRetryPeriod)
    throw new ConfigError('--leader-elect-renew-deadline must be greater than 1.2 × --leader-elect-retry-period');
  if (config.staleAfter <= config.interval) throw new ConfigError('--stale-after must be greater than --interval');
  if (!config.leaderElectResourceName) throw new ConfigError('--leader-elect-resource-name must not be empty');
  if (config.stallTimeout <= config.interval) throw new ConfigError('--stall-timeout must be greater than --interval');
}

/**
 * Always a shape (a lone cluster id still names this cluster's records); the hub only in multi-cluster mode, with
 * both --cluster-id and --federation-redis-url.
 */
function validateFederation(config: ControlPlaneConfig): FederationSettings & { peersFile?: string } {
  positiveDurations([['--federation-interval', config.federationInterval]]);
  const ttlMs = config.federationTtl ?? FEDERATION_DEFAULTS.ttlFactor * config.federationInterval;
  if (!(ttlMs > config.federationInterval))
    throw new ConfigError(
      '--federation-ttl must be greater than --federation-interval (a record must outlive the next report)',
    );
  if (!config.federationPrefix) throw new ConfigError('--federation-prefix must not be empty');
  if (config.federationTokenFile !== undefined)
    throw new ConfigError(
      `--federation-token-file (FEDERATION_TOKEN_FILE) was removed: a token shared by every cluster let its holder act on every claim. ${PEERS_FILE_HINT}`,
    );
  if (config.claimsAdvertiseUrl !== undefined)
    throw new ConfigError(
      `--claims-advertise-url (CLAIMS_ADVERTISE_URL) was removed: a peer's claim API URL is no longer read from the hub. ${PEERS_FILE_HINT}`,
    );
  const alone = { ...(config.clusterId ? { clusterId: config.clusterId } : {}), intervalMs: config.federationInterval };
  const redisFlags: RedisFlags = {
    url: ['--federation-redis-url', config.federationRedisUrl],
    passwordFile: ['--federation-redis-password-file', config.federationRedisPasswordFile],
    caFile: ['--federation-redis-ca-file', config.federationRedisCaFile],
    timeout: ['--federation-redis-timeout', config.federationRedisTimeout],
  };
  if (!config.federationRedisUrl) noRedisFlagsWithoutUrl(redisFlags);
  const redis = config.federationRedisUrl ? redisSettingsOf(redisFlags, config.federationRedisUrl) : undefined;
  if (redis === undefined || !config.clusterId) {
    if (config.federationPeersFile)
      throw new ConfigError('--federation-peers-file needs --cluster-id and --federation-redis-url (federation)');
    return alone;
  }
  return {
    ...alone,
    ttlMs,
    hub: { redis, prefix: config.federationPrefix },
    ...(config.federationPeersFile ? { peersFile: config.federationPeersFile } : {}),
  };
}

function validateSandboxApi(config: ControlPlaneConfig): SandboxApiSettings | undefined {
  const tlsFlags = config.aggregatedTlsCertFile !== undefined || config.aggregatedTlsKeyFile !== undefined;
  if (!config.aggregatedListen) {
    if (tlsFlags)
      throw new ConfigError('--aggregated-tls-cert-file / --aggregated-tls-key-file need --aggregated-listen');
    return undefined;
  }
  const listen = hostPortFlag('--aggregated-listen', config.aggregatedListen);
  const tls = pairedFiles(
    ['--aggregated-tls-cert-file', config.aggregatedTlsCertFile],
    ['--aggregated-tls-key-file', config.aggregatedTlsKeyFile],
  );
  const selfSignedNames = config.aggregatedTlsSans
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  return { listen, ...(tls !== undefined ? { tls } : {}), selfSignedNames };
}

function validateClaims(config: ControlPlaneConfig): ClaimsSettings | undefined {
  const tlsFlags = config.claimsTlsCertFile !== undefined || config.claimsTlsKeyFile !== undefined;
  const redisFlags: RedisFlags = {
    url: ['--redis-url', config.redisUrl],
    passwordFile: ['--redis-password-file', config.redisPasswordFile],
    caFile: ['--redis-ca-file', config.redisCaFile],
    timeout: ['--redis-timeout', config.redisTimeout],
    sentinels: ['--redis-sentinels', config.redisSentinels],
    sentinelMaster: ['--redis-sentinel-master', config.redisSentinelMaster],
    sentinelPasswordFile: ['--redis-sentinel-password-file', config.redisSentinelPasswordFile],
  };
  if (!config.redisUrl) {
    if (tlsFlags)
      throw new ConfigError(
        '--claims-tls-cert-file / --claims-tls-key-file need --redis-url (the claim API is served only with provisioning on)',
      );
    noRedisFlagsWithoutUrl(redisFlags);
    return undefined;
  }
  const redis = redisSettingsOf(redisFlags, config.redisUrl);
  const listen = hostPortFlag('--claims-listen', config.claimsListen);
  const tls = pairedFiles(
    ['--claims-tls-cert-file', config.claimsTlsCertFile],
    ['--claims-tls-key-file', config.claimsTlsKeyFile],
  );
  positiveDurations([
    ['--claim-batch-max', config.claimBatchMax],
    ['--claim-timeout', config.claimTimeout],
    ['--claim-lock-duration', config.claimLockDuration],
    ['--claim-stalled-interval', config.claimStalledInterval],
    ['--claim-node-timeout', config.claimNodeTimeout],
    ['--claim-cold-node-timeout', config.claimColdNodeTimeout],
  ]);
  if (config.claimColdNodeTimeout < config.claimNodeTimeout)
    throw new ConfigError('--claim-cold-node-timeout must not be below --claim-node-timeout');
  if (config.claimBatchIdle < 0) throw new ConfigError('--claim-batch-idle must not be negative');
  if (config.claimBatchRejoin < 0) throw new ConfigError('--claim-batch-rejoin must not be negative');
  countsOfAtLeastOne([
    ['--claim-batch-max-items', config.claimBatchMaxItems],
    ['--claim-worker-concurrency', config.claimWorkerConcurrency],
    ['--claim-attempts', config.claimAttempts],
  ]);
  return {
    redis,
    listen,
    ...(tls !== undefined ? { tls } : {}),
    settings: {
      batcher: {
        idleMs: config.claimBatchIdle,
        maxDurationMs: config.claimBatchMax,
        maxItems: config.claimBatchMaxItems,
      },
      batchRejoinMs: config.claimBatchRejoin,
      claimTimeoutMs: config.claimTimeout,
      workerConcurrency: config.claimWorkerConcurrency,
      lockDurationMs: config.claimLockDuration,
      stalledIntervalMs: config.claimStalledInterval,
      nodeTimeoutMs: config.claimNodeTimeout,
      coldNodeTimeoutMs: config.claimColdNodeTimeout,
      maxAttempts: config.claimAttempts,
    },
  };
}

function defaultNamespaceFile(): string | undefined {
  if (!existsSync(SERVICE_ACCOUNT_NAMESPACE)) return undefined;
  return readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim() || undefined;
}
