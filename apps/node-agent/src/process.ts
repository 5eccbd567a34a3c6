// The node agent as a process (a DaemonSet pod): flags and env, the fleet
// token, Kubernetes access for the inventory, graceful shutdown on SIGTERM.
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { loadKubeConfig } from '@warmpool/kube';
import {
  ConfigError,
  createLogger,
  FLEET_TOKEN_ENV,
  helpText,
  messageOf,
  packageVersion,
  parseConfig,
  parseLogLevel,
  parseLogFormat,
  readTokenFile,
  runMain,
  Shutdown,
  versionLine,
} from '@warmpool/runtime';
import { createNodeAgent } from './agent.js';
import { advertiseAddressOf, FLAGS, SUMMARY, validateConfig } from './config.js';
import { KubeInventoryWriter } from './inventory/writer.js';

async function main(): Promise<void> {
  const { config, help, version: printVersion } = parseConfig(FLAGS);
  const version = packageVersion(import.meta.url);
  if (help) {
    process.stdout.write(helpText('node-agent', SUMMARY, FLAGS));
    return;
  }
  if (printVersion) {
    process.stdout.write(versionLine('node-agent', version));
    return;
  }
  const { listen } = validateConfig(config);
  if (config.tokenFile !== undefined) {
    try {
      readTokenFile(config.tokenFile);
    } catch (err) {
      throw new ConfigError(`--token-file: cannot read ${config.tokenFile} (${messageOf(err)})`);
    }
  }
  const logger = createLogger('node-agent', {
    level: parseLogLevel(config.logLevel),
    format: parseLogFormat(config.logFormat),
  });
  if (!config.noInventory) advertiseAddressOf(config, listen);
  const inventory = !config.noInventory ? new KubeInventoryWriter(loadKubeConfig(config.kubeconfig)) : undefined;
  const registry = new Registry();
  // Node's process_* / nodejs_* metrics under their standard names, so stock dashboards work.
  collectDefaultMetrics({ register: registry });
  new Gauge({
    name: 'warmpool_build_info',
    help: 'Always 1; the labels say which build runs',
    labelNames: ['component', 'version', 'node_version'],
    registers: [registry],
  }).set({ component: 'node-agent', version, node_version: process.version }, 1);

  const agent = createNodeAgent({
    sandboxdUrl: config.sandboxdUrl,
    ...(config.tokenFile !== undefined ? { tokenFile: config.tokenFile } : { token: process.env[FLEET_TOKEN_ENV] }),
    tokenGraceMs: config.tokenGrace,
    listen,
    ...(config.nodeName ? { nodeName: config.nodeName } : {}),
    // Checked now so a bad setting fails before anything starts; derived again from the bound port (--listen may say
    // :0).
    ...(inventory
      ? { inventory, advertiseAddress: (bound) => advertiseAddressOf(config, { host: listen.host, port: bound.port }) }
      : {}),
    ...(config.capacity !== undefined ? { capacity: config.capacity } : {}),
    publishIntervalMs: config.publishInterval,
    minPublishGapMs: config.minPublishGap,
    pollIntervalMs: config.pollInterval,
    sandboxdTimeoutMs: config.sandboxdTimeout,
    sandboxdClaimTimeoutMs: config.sandboxdClaimTimeout,
    sandboxdPoolsTimeoutMs: config.sandboxdPoolsTimeout,
    maxClaimsInFlight: config.maxClaimsInFlight,
    drainDelayMs: config.drainDelay,
    closeTimeoutMs: config.shutdownTimeout,
    logger,
    registry,
  });
  // The agent's own close() is bounded by --drain-delay plus --shutdown-timeout; the deadline here only guards against
  // a hang.
  const shutdown = new Shutdown({ logger, timeoutMs: config.drainDelay + config.shutdownTimeout + 5_000 });
  shutdown.add('node-agent', agent);
  await agent.start();
}

runMain('node-agent', main);
