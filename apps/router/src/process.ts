// The router as a process (a Deployment's pod): flags and env, the Kubernetes
// access, metrics, graceful shutdown on SIGTERM.
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { loadKubeConfig, transportFor } from '@warmpool/kube';
import {
  createLogger,
  formatHostPort,
  helpText,
  packageVersion,
  parseConfig,
  parseLogLevel,
  runMain,
  Shutdown,
  versionLine,
} from '@warmpool/runtime';
import { FLAGS, SUMMARY, validateConfig } from './config.js';
import { startRouter } from './router.js';

async function main(): Promise<void> {
  const { config, help, version: printVersion } = parseConfig(FLAGS);
  const version = packageVersion(import.meta.url);
  if (help) {
    process.stdout.write(helpText('router', SUMMARY, FLAGS));
    return;
  }
  if (printVersion) {
    process.stdout.write(versionLine('router', version));
    return;
  }
  const { listen } = validateConfig(config);
  const logger = createLogger('router', { level: parseLogLevel(config.logLevel) });
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  new Gauge({
    name: 'warmpool_build_info',
    help: 'Always 1; the labels say which build runs',
    labelNames: ['component', 'version', 'node_version'],
    registers: [registry],
  }).set({ component: 'router', version, node_version: process.version }, 1);
  const transport = transportFor(loadKubeConfig(config.kubeconfig));
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

runMain('router', main);
