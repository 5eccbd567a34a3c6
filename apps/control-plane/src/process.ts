// The control plane as a process (a Deployment pod): flags and env, the fleet
// token, Kubernetes access, health/metrics, and a SIGTERM that stops pushing,
// releases the lease (a standby takes over at once) and closes everything.
import { collectDefaultMetrics, Registry } from 'prom-client';
import { loadKubeConfig } from '@warmpool/kube';
import {
  FLEET_TOKEN_ENV,
  runProcess,
  Shutdown,
  TokenRotation,
  watchTokenFile,
  type ProcessContext,
} from '@warmpool/runtime';
import { FLAGS, SUMMARY } from './config/flags.js';
import { validateConfig } from './config/validate.js';
import { createControlPlane } from './control-plane.js';
import { PeerDirectory } from './federation/peers.js';
import { rotatingToken, staticToken, type TokenSource } from './agents/token.js';

const TOKEN_FILE_CHECK_MS = 10_000;

async function main({ config, version, logger }: ProcessContext<typeof FLAGS>): Promise<void> {
  const settings = validateConfig(config);
  const federation = settings.federation;
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
  if (federation.peersFile !== undefined && federation.clusterId !== undefined) {
    peers = new PeerDirectory(federation.peersFile, {
      clusterId: federation.clusterId,
      graceMs: config.tokenGrace,
      checkIntervalMs: TOKEN_FILE_CHECK_MS,
      logger: logger.child({ subsystem: 'federation-peers' }),
    });
    logger.info('federation peers loaded', { file: peers.file, peers: peers.ids });
    shutdown.add('federation-peers-file', peers);
  }
  if (federation.hub === undefined && (config.clusterId || config.federationRedisUrl)) {
    logger.warn('federation needs both --cluster-id and --federation-redis-url: running as a single cluster', {
      clusterId: config.clusterId ?? null,
    });
  }
  if (federation.hub !== undefined && peers === undefined) {
    logger.warn(
      'federation without --federation-peers-file: capacity is shared and shown, but no claim spills to a peer and none is accepted from one',
    );
  }

  const registry = new Registry();
  // Node's process_* / nodejs_* metrics under their standard names, so stock dashboards work.
  collectDefaultMetrics({ register: registry });
  const controlPlane = createControlPlane({
    ...settings,
    federation: { ...settings.federation, ...(peers !== undefined ? { peers } : {}) },
    kubeConfig: loadKubeConfig(config.kubeconfig, { requestIdleTimeoutMs: config.kubeRequestTimeout }),
    token,
    version,
    logger,
    registry,
  });
  if (settings.claims === undefined)
    logger.info('provisioning is off (no --redis-url): no claim API, no batch workers');
  shutdown.add('control-plane', controlPlane);
  await controlPlane.start();
}

runProcess({ name: 'control-plane', summary: SUMMARY, flags: FLAGS, moduleUrl: import.meta.url }, main);
