// The control plane as a process (a Deployment pod): flags and env, the fleet
// token, Kubernetes access, health/metrics, and a SIGTERM that stops pushing,
// releases the lease (a standby takes over at once) and closes everything.
import { readFileSync } from 'node:fs';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { loadKubeConfig } from '@warmpool/kube';
import {
  createLogger,
  FLEET_TOKEN_ENV,
  helpText,
  packageVersion,
  parseConfig,
  parseLogLevel,
  parseLogFormat,
  runMain,
  Shutdown,
  TokenRotation,
  versionLine,
  watchTokenFile,
} from '@warmpool/runtime';
import { FLAGS, SUMMARY, validateConfig } from './config.js';
import { createControlPlane, defaultIdentity } from './control-plane.js';
import { PeerDirectory } from './federation/peers.js';
import { rotatingToken, staticToken, type TokenSource } from './token.js';

const TOKEN_FILE_CHECK_MS = 10_000;

async function main(): Promise<void> {
  const { config, help, version: printVersion } = parseConfig(FLAGS);
  const version = packageVersion(import.meta.url);
  if (help) {
    process.stdout.write(helpText('control-plane', SUMMARY, FLAGS));
    return;
  }
  if (printVersion) {
    process.stdout.write(versionLine('control-plane', version));
    return;
  }
  const { listen, probeListen, namespace, claims, federation, aggregated } = validateConfig(config);
  const logger = createLogger('control-plane', {
    level: parseLogLevel(config.logLevel),
    format: parseLogFormat(config.logFormat),
  });
  const shutdown = new Shutdown({ logger, timeoutMs: config.shutdownTimeout });

  let token: TokenSource;
  if (config.tokenFile !== undefined) {
    const file = config.tokenFile;
    const rotation = new TokenRotation<string>(undefined, { graceMs: config.tokenGrace, derive: (value) => value });
    const watch = watchTokenFile(file, TOKEN_FILE_CHECK_MS, {
      onError: (err) => logger.error('cannot read the token file', { tokenFile: file, err }),
      onChange: (value) => {
        rotation.set(value);
        logger.info(
          'fleet token reloaded; the replaced one is still tried with agents that refuse the new one, during the grace',
          { tokenFile: file, configured: value !== undefined, graceMs: config.tokenGrace },
        );
      },
    });
    rotation.set(watch.current);
    logger.info('fleet token loaded', { tokenFile: file, configured: watch.current !== undefined });
    shutdown.add('token-file', watch);
    token = rotatingToken(rotation);
  } else {
    token = staticToken(process.env[FLEET_TOKEN_ENV]);
  }

  let peers: PeerDirectory | undefined;
  if (federation?.peersFile !== undefined) {
    peers = new PeerDirectory(federation.peersFile, {
      clusterId: federation.clusterId,
      graceMs: config.tokenGrace,
      checkIntervalMs: TOKEN_FILE_CHECK_MS,
      logger: logger.child({ subsystem: 'federation-peers' }),
    });
    logger.info('federation peers loaded', { file: peers.file, peers: peers.ids });
    shutdown.add('federation-peers-file', peers);
  }
  if (federation === undefined && (config.clusterId || config.federationRedisUrl)) {
    logger.warn('federation needs both --cluster-id and --federation-redis-url: running as a single cluster', {
      clusterId: config.clusterId ?? null,
    });
  }
  if (federation !== undefined && peers === undefined) {
    logger.warn(
      'federation without --federation-peers-file: capacity is shared and shown, but no claim spills to a peer and none is accepted from one',
    );
  }

  const registry = new Registry();
  // Node's process_* / nodejs_* metrics under their standard names, so stock dashboards work.
  collectDefaultMetrics({ register: registry });
  const controlPlane = createControlPlane({
    kubeConfig: loadKubeConfig(config.kubeconfig),
    token,
    namespace,
    identity: config.identity || defaultIdentity(),
    leaderElection: config.leaderElect,
    leaseName: config.leaderElectResourceName,
    ...(config.agentPodSelector ? { agentPodSelector: config.agentPodSelector } : {}),
    leaseDurationMs: config.leaderElectLeaseDuration,
    renewDeadlineMs: config.leaderElectRenewDeadline,
    retryPeriodMs: config.leaderElectRetryPeriod,
    version,
    driver: {
      intervalMs: config.interval,
      staleAfterMs: config.staleAfter,
      agentCallConcurrency: config.setPoolsConcurrency,
      failureThreshold: config.failureThreshold,
    },
    setPoolsTimeoutMs: config.setPoolsTimeout,
    setPoolsPushTimeoutMs: config.setPoolsPushTimeout,
    setPoolsAttempts: config.setPoolsAttempts,
    listen,
    ...(probeListen ? { probeListen } : {}),
    stallTimeoutMs: config.stallTimeout,
    logger,
    registry,
    envScaleDownDelayMs: config.envScaleDownDelay,
    federation: {
      ...(config.clusterId ? { clusterId: config.clusterId } : {}),
      intervalMs: config.federationInterval,
      ...(federation !== undefined
        ? {
            ttlMs: federation.ttlMs,
            hub: {
              redis: federation.redis,
              prefix: config.federationPrefix,
            },
          }
        : {}),
      ...(peers !== undefined ? { peers } : {}),
    },
    ...(claims !== undefined
      ? {
          claims: {
            redis: claims.redis,
            listen: claims.listen,
            ...(claims.tls !== undefined
              ? { tls: { cert: readFileSync(claims.tls.certFile), key: readFileSync(claims.tls.keyFile) } }
              : {}),
            settings: {
              batcher: {
                idleMs: config.claimBatchIdle,
                maxDurationMs: config.claimBatchMax,
                maxItems: config.claimBatchMaxItems,
              },
              claimTimeoutMs: config.claimTimeout,
              workerConcurrency: config.claimWorkerConcurrency,
              lockDurationMs: config.claimLockDuration,
              stalledIntervalMs: config.claimStalledInterval,
              nodeTimeoutMs: config.claimNodeTimeout,
              coldNodeTimeoutMs: config.claimColdNodeTimeout,
              maxAttempts: config.claimAttempts,
            },
          },
        }
      : {}),
    sandboxClaims: {
      controller: { leaseSeconds: Math.ceil(config.sandboxclaimLease / 1000) },
      janitor: { intervalMs: config.claimJanitorInterval, graceMs: config.claimJanitorGrace },
    },
    ...(aggregated !== undefined
      ? {
          sandboxApi: {
            listen: aggregated.listen,
            ...(aggregated.tls !== undefined ? { tls: aggregated.tls } : {}),
            selfSignedNames: aggregated.selfSignedNames,
          },
        }
      : {}),
  });
  if (claims === undefined) logger.info('provisioning is off (no --redis-url): no claim API, no batch workers');
  shutdown.add('control-plane', controlPlane);
  await controlPlane.start();
}

runMain('control-plane', main);
