// The node agent as a process (a DaemonSet pod): flags and env, the fleet
// token, Kubernetes access for the inventory, graceful shutdown on SIGTERM.
import { loadKubeConfig } from '@warmpool/kube';
import {
  ConfigError,
  FLEET_TOKEN_ENV,
  messageOf,
  processRegistry,
  readTokenFile,
  runProcess,
  Shutdown,
  type ProcessContext,
} from '@warmpool/runtime';
import { createNodeAgent } from './agent.js';
import { advertiseAddressOf, FLAGS, SUMMARY, validateConfig } from './config.js';
import { KubeInventoryWriter } from './inventory/writer.js';

async function main({ config, version, logger }: ProcessContext<typeof FLAGS>): Promise<void> {
  const { listen } = validateConfig(config);
  if (config.tokenFile !== undefined) {
    try {
      readTokenFile(config.tokenFile);
    } catch (err) {
      throw new ConfigError(`--token-file: cannot read ${config.tokenFile} (${messageOf(err)})`);
    }
  }
  if (!config.noInventory) advertiseAddressOf(config, listen);
  const inventory = !config.noInventory
    ? new KubeInventoryWriter(loadKubeConfig(config.kubeconfig, { requestIdleTimeoutMs: config.kubeRequestTimeout }))
    : undefined;
  const registry = processRegistry('node-agent', version);

  const agent = createNodeAgent({
    sandboxdUrl: config.sandboxdUrl,
    ...(config.tokenFile !== undefined ? { tokenFile: config.tokenFile } : { token: process.env[FLEET_TOKEN_ENV] }),
    tokenGraceMs: config.tokenGrace,
    listen,
    ...(config.nodeName ? { nodeName: config.nodeName } : {}),
    // Checked now so a bad setting fails before anything starts; derived again from the bound port (--listen may say
    // :0).
    ...(inventory
      ? {
          inventory,
          advertiseAddress: (bound) => advertiseAddressOf(config, { host: listen.host, port: bound.port }),
        }
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

runProcess({ name: 'node-agent', summary: SUMMARY, flags: FLAGS, moduleUrl: import.meta.url }, main);
