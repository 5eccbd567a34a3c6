// The router as a process (a Deployment's pod): flags and env, the Kubernetes
// access, metrics, graceful shutdown on SIGTERM.
import { loadKubeConfig, transportFor } from '@warmpool/kube';
import { formatHostPort, processRegistry, runProcess, Shutdown, type ProcessContext } from '@warmpool/runtime';
import { FLAGS, SUMMARY, validateConfig } from './config.js';
import { startRouter } from './router.js';

async function main({ config, version, logger }: ProcessContext<typeof FLAGS>): Promise<void> {
  const { listen } = validateConfig(config);
  const registry = processRegistry('router', version);
  const transport = transportFor(
    loadKubeConfig(config.kubeconfig, { requestIdleTimeoutMs: config.kubeRequestTimeout }),
  );
  const shutdown = new Shutdown({ logger, timeoutMs: config.shutdownTimeout + 5_000 });
  const router = await startRouter({
    transport,
    listen,
    registry,
    logger,
    runtimePort: config.runtimePort,
    ...(config.tokenlessUser !== undefined ? { tokenlessUser: config.tokenlessUser } : {}),
    proxyTimeoutMs: config.proxyTimeout,
    routeCacheTtlMs: config.routeCacheTtl,
    reviewCacheTtlMs: config.reviewCacheTtl,
    shutdownTimeoutMs: config.shutdownTimeout,
  });
  shutdown.add('router', router);
  logger.info('serving', {
    address: formatHostPort(router.server.address),
    tokenless: config.tokenlessUser !== undefined ? config.tokenlessUser : 'refused',
  });
}

runProcess({ name: 'router', summary: SUMMARY, flags: FLAGS, moduleUrl: import.meta.url }, main);
