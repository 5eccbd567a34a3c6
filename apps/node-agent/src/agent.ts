// One node agent: the API in front of a sandboxd, the watch on that sandboxd,
// and (given a writer) the NodeInventory publisher. Everything a process
// needs is here, so a benchmark can host many agents in one process.
import type { NodeInfo } from '@warmpool/api';
import { formatHostPort, readTokenFile, serveApp, silentLogger, watchTokenFile, type HostPort, type HttpServer, type Logger, type TokenFileWatch } from '@warmpool/runtime';
import type { Hono } from 'hono';
import type { Registry } from 'prom-client';
import { Gatekeeper } from './api/auth.js';
import { createApiApp } from './api/app.js';
import { GenerationGuard } from './generation.js';
import { readEntries } from './inventory/entries.js';
import { InventoryPublisher } from './inventory/publisher.js';
import type { InventoryWriter } from './inventory/writer.js';
import { AgentMetrics } from './metrics.js';
import { NodeState } from './node-state.js';
import { SandboxdClient } from './sandboxd/client.js';
import { FleetToken } from './token.js';

export interface NodeAgentOptions {
  /** `http://host:port` or `unix:/path` of this node's sandboxd. */
  sandboxdUrl: string;
  /** The fleet token. Without one (and without tokenFile) the agent refuses every guarded call with 503. */
  token?: string;
  /** Read the fleet token from this file (wins over `token`), and again whenever it changes. */
  tokenFile?: string;
  /** How often the token file is checked for a change (default 10 s). */
  tokenReloadIntervalMs?: number;
  /** Where to serve (default 127.0.0.1, any free port). */
  listen?: HostPort;
  /** The node's name: the NodeInventory's name. Required with `inventory`. */
  nodeName?: string;
  /** spec.address of the inventory, or how to derive it from the bound address (default: the bound address). */
  advertiseAddress?: string | ((bound: HostPort) => string);
  /** Where the NodeInventory goes; without one nothing is published and readiness needs only sandboxd. */
  inventory?: InventoryWriter;
  /** status.capacity: sandboxes the node can hold, when known. */
  capacity?: number;
  publishIntervalMs?: number;
  minPublishGapMs?: number;
  publishRetryInitialMs?: number;
  publishRetryMaxMs?: number;
  pollIntervalMs?: number;
  sandboxdTimeoutMs?: number;
  sandboxdConnections?: number;
  /** After this long at close(), requests still in flight are cut (default 20 s). */
  closeTimeoutMs?: number;
  logger?: Logger;
  /** Metrics go here (default: a registry of the agent's own). */
  registry?: Registry;
}

export interface NodeAgent {
  readonly app: Hono;
  readonly metrics: AgentMetrics;
  readonly generations: GenerationGuard;
  /** The bound URL, once started. */
  readonly url: string;
  /** Why the agent is not ready (empty when it is). */
  notReadyReasons(): string[];
  start(): Promise<{ url: string; address: HostPort }>;
  /** Stops accepting, lets requests in flight finish, then stops polling and publishing. Sandboxes are left as they are. */
  close(): Promise<void>;
}

export const DEFAULTS = {
  publishIntervalMs: 30_000,
  minPublishGapMs: 5_000,
  pollIntervalMs: 1_000,
  sandboxdTimeoutMs: 10_000,
  closeTimeoutMs: 20_000,
} as const;

export function createNodeAgent(options: NodeAgentOptions): NodeAgent {
  if (options.inventory !== undefined && !options.nodeName) throw new Error('a node name is required to publish the NodeInventory');
  const logger = options.logger ?? silentLogger;
  const token = new FleetToken(options.tokenFile !== undefined ? readTokenFile(options.tokenFile) : options.token);
  const metrics = new AgentMetrics(options.registry);
  const sandboxd = new SandboxdClient({
    url: options.sandboxdUrl,
    rootToken: token.value,
    timeoutMs: options.sandboxdTimeoutMs ?? DEFAULTS.sandboxdTimeoutMs,
    ...(options.sandboxdConnections !== undefined ? { connections: options.sandboxdConnections } : {}),
  });
  // With an inventory, the generation applied before a restart lives there and must be read back first.
  const generations = new GenerationGuard({ recovered: options.inventory === undefined });
  const state = new NodeState({ client: sandboxd, pollIntervalMs: options.pollIntervalMs ?? DEFAULTS.pollIntervalMs, logger, metrics });
  let publisher: InventoryPublisher | undefined;
  let server: HttpServer | undefined;
  let tokenWatch: TokenFileWatch | undefined;
  let started: Promise<{ url: string; address: HostPort }> | undefined;
  let closing: Promise<void> | undefined;

  const notReadyReasons = (): string[] => {
    const reasons: string[] = [];
    if (!token.configured) reasons.push('no API token configured');
    if (!state.answering) reasons.push(state.problem ?? 'sandboxd not answering');
    if (options.inventory !== undefined && !publisher?.publishedOnce) {
      reasons.push(publisher?.lastError ? `NodeInventory not published yet: ${publisher.lastError}` : 'NodeInventory not published yet');
    }
    return reasons;
  };

  const app = createApiApp({
    sandboxd, gatekeeper: new Gatekeeper(token), generations, state, metrics, notReadyReasons, logger,
  });

  generations.onApplied((generation) => {
    metrics.appliedGeneration(generation);
    publisher?.changed();
  });
  state.onInfo(() => publisher?.changed());

  const start = async (): Promise<{ url: string; address: HostPort }> => {
    if (!token.configured) logger.warn('no API token configured: every call except health, readiness and metrics answers 503');
    if (options.tokenFile !== undefined) {
      const file = options.tokenFile;
      tokenWatch = watchTokenFile(file, options.tokenReloadIntervalMs ?? 10_000, {
        onChange: (value) => {
          token.set(value);
          sandboxd.setRootToken(token.value);
          logger.info('API token reloaded', { tokenFile: file, configured: token.configured });
        },
        onError: (err) => logger.warn('cannot re-read the token file; keeping the last token', { tokenFile: file, err }),
      });
    }
    server = await serveApp(app, {
      host: options.listen?.host ?? '127.0.0.1',
      port: options.listen?.port ?? 0,
      closeTimeoutMs: options.closeTimeoutMs ?? DEFAULTS.closeTimeoutMs,
    });
    await state.start();
    if (options.inventory !== undefined && options.nodeName) {
      const advertise = options.advertiseAddress;
      const address = typeof advertise === 'function' ? advertise(server.address) : advertise ?? formatHostPort(server.address);
      publisher = new InventoryPublisher({
        writer: options.inventory,
        nodeName: options.nodeName,
        address,
        ...(options.capacity !== undefined ? { capacity: options.capacity } : {}),
        generations,
        currentInfo: (): NodeInfo | undefined => state.info,
        readEntries: () => readEntries(sandboxd),
        publishIntervalMs: options.publishIntervalMs ?? DEFAULTS.publishIntervalMs,
        minPublishGapMs: options.minPublishGapMs ?? DEFAULTS.minPublishGapMs,
        ...(options.publishRetryInitialMs !== undefined ? { retryInitialMs: options.publishRetryInitialMs } : {}),
        ...(options.publishRetryMaxMs !== undefined ? { retryMaxMs: options.publishRetryMaxMs } : {}),
        logger,
        metrics,
      });
      publisher.start();
    }
    logger.info('node agent serving', { url: server.url, sandboxd: options.sandboxdUrl, node: options.nodeName ?? null });
    return { url: server.url, address: server.address };
  };

  const close = async (): Promise<void> => {
    // A start still under way finishes first, so nothing it opens is left behind.
    await started?.catch(() => undefined);
    // Requests in flight still need sandboxd, so the server goes first and the sandboxd pool last.
    await server?.close();
    await publisher?.close();
    await state.close();
    tokenWatch?.close();
    await sandboxd.close();
  };

  return {
    app,
    metrics,
    generations,
    get url(): string {
      if (server === undefined) throw new Error('the node agent is not started');
      return server.url;
    },
    notReadyReasons,
    start: () => (started ??= start()),
    close: () => (closing ??= close()),
  };
}
