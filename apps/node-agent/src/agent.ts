// One node agent: the API in front of a sandboxd, the watch on that sandboxd,
// and (given a writer) the NodeInventory publisher. Everything a process
// needs is here, so a benchmark can host many agents in one process.
import type { NodeInfo } from '@warmpool/api';
import {
  AcceptedToken,
  closeInOrder,
  DEFAULT_TOKEN_GRACE_MS,
  formatHostPort,
  readTokenFile,
  serveApp,
  silentLogger,
  watchTokenFile,
  type HostPort,
  type HttpServer,
  type ServeOptions,
  type Logger,
  type TokenFileWatch,
} from '@warmpool/runtime';
import type { Hono } from 'hono';
import type { Registry } from 'prom-client';
import { Gatekeeper } from './api/auth.js';
import { createApiApp } from './api/app.js';
import { ClaimsInFlight } from './api/claims-in-flight.js';
import { GenerationGuard } from './generation.js';
import { nodeClaimsReader } from './inventory/entries.js';
import { InventoryPublisher } from './inventory/publisher.js';
import type { InventoryWriter } from './inventory/writer.js';
import { AgentMetrics } from './metrics.js';
import { NodeState } from './node-state.js';
import { OwnerAddress } from './owner-address.js';
import { SandboxdClient } from './sandboxd/client.js';

export interface NodeAgentOptions {
  /** `http://host:port` or `unix:/path` of this node's sandboxd. */
  sandboxdUrl: string;
  /** The fleet token. Without one (and without tokenFile) the agent refuses every guarded call with 503. */
  token?: string;
  /** Read the fleet token from this file (wins over `token`), and again whenever it changes. */
  tokenFile?: string;
  /** How often the token file is checked for a change (default 10 s). */
  tokenReloadIntervalMs?: number;
  /**
   * After the token file changed, how long the replaced token is still
   * accepted from callers and tried with sandboxd when it refuses the new one
   * (default 5 min): every holder of a rotated Secret reads it at its own moment.
   */
  tokenGraceMs?: number;
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
  /** One deadline per sandboxd call, the wait for a connection included (default 10 s). */
  sandboxdTimeoutMs?: number;
  /** A claim's deadline at sandboxd (default: sandboxdTimeoutMs, else 92 s: a cold boot takes up to 90 s). */
  sandboxdClaimTimeoutMs?: number;
  /** SetPools' deadline at sandboxd (default: sandboxdTimeoutMs, else 50 s: it answers once trimmed VMs are gone). */
  sandboxdPoolsTimeoutMs?: number;
  /** Claims in flight to sandboxd at most; past it a claim answers 429 at once (default 256). */
  maxClaimsInFlight?: number;
  /**
   * Connections to sandboxd for claims and per-sandbox calls (default: maxClaimsInFlight + 32, so those calls never
   * wait for one).
   */
  sandboxdConnections?: number;
  /** Connections to sandboxd for info, SetPools and drain, apart from the claims' (default 4). */
  sandboxdControlConnections?: number;
  /**
   * At close(), how long the agent keeps serving while /readyz answers 503,
   * before it stops accepting (default 0 here; the process's --drain-delay
   * defaults to 5 s).
   */
  drainDelayMs?: number;
  /** After this long at close() (after the drain delay), requests still in flight are cut (default 20 s). */
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
  /**
   * Turns unready and keeps serving for the drain delay, then stops
   * accepting, lets requests in flight finish, and stops polling and
   * publishing. Sandboxes are left as they are.
   */
  close(): Promise<void>;
}

export const DEFAULTS = {
  publishIntervalMs: 30_000,
  minPublishGapMs: 5_000,
  pollIntervalMs: 1_000,
  sandboxdTimeoutMs: 10_000,
  /** Above sandboxd's 90 s cold window, below the control plane's 95 s cold claim timeout (so it hears why). */
  sandboxdClaimTimeoutMs: 92_000,
  /** Below the control plane's 60 s push timeout, so it hears OutcomeUnknown rather than nothing. */
  sandboxdPoolsTimeoutMs: 50_000,
  maxClaimsInFlight: 256,
  closeTimeoutMs: 20_000,
  /** The process's default (--drain-delay); a library caller's is 0. */
  drainDelayMs: 5_000,
} as const;

/** Connections beyond the claims' own, for release, renew and lookups while claims fill their bound. */
const PER_SANDBOX_CONNECTIONS = 32;

export function createNodeAgent(options: NodeAgentOptions): NodeAgent {
  if (options.inventory !== undefined && !options.nodeName)
    throw new Error('a node name is required to publish the NodeInventory');
  const logger = options.logger ?? silentLogger;
  const tokenGraceMs = options.tokenGraceMs ?? DEFAULT_TOKEN_GRACE_MS;
  const initialToken = options.tokenFile !== undefined ? readTokenFile(options.tokenFile) : options.token;
  const token = new AcceptedToken(initialToken, { graceMs: tokenGraceMs });
  const metrics = new AgentMetrics(options.registry);
  const inFlight = new ClaimsInFlight(options.maxClaimsInFlight ?? DEFAULTS.maxClaimsInFlight);
  const sandboxd = sandboxdClientOf(options, token, tokenGraceMs, inFlight.limit);
  // With an inventory, the generation applied before a restart lives there and must be read back first.
  const generations = new GenerationGuard({ recovered: options.inventory === undefined });
  const pollIntervalMs = options.pollIntervalMs ?? DEFAULTS.pollIntervalMs;
  const state = new NodeState({ client: sandboxd, pollIntervalMs, logger, metrics });
  const ownerAddress = new OwnerAddress(logger);
  let publisher: InventoryPublisher | undefined;
  let server: HttpServer | undefined;
  let tokenWatch: TokenFileWatch | undefined;
  let started: Promise<{ url: string; address: HostPort }> | undefined;
  let closing: Promise<void> | undefined;

  const publishes = options.inventory !== undefined;
  const notReadyReasons = (): string[] =>
    notReadyOf({ closing: closing !== undefined, token, state, publishes, publisher });

  const parts = { sandboxd, generations, state, ownerAddress, metrics, logger };
  const { app, ahead } = createApiApp({ ...parts, gatekeeper: new Gatekeeper(token), inFlight, notReadyReasons });

  republishOnChange(parts, () => publisher);

  const start = async (): Promise<{ url: string; address: HostPort }> => {
    if (!token.configured)
      logger.warn('no API token configured: every call except health, readiness and metrics answers 503');
    tokenWatch = followTokenFile(options, token, sandboxd, tokenGraceMs, logger);
    server = await serveApp(app, { ...serveOptionsOf(options), ahead });
    await state.start();
    publisher = publisherOf(options, server.address, parts);
    publisher?.start();
    logger.info('node agent serving', {
      url: server.url,
      sandboxd: options.sandboxdUrl,
      node: options.nodeName ?? null,
    });
    return { url: server.url, address: server.address };
  };

  const close = async (): Promise<void> => {
    // A start still under way finishes first, so nothing it opens is left behind.
    await started?.catch(() => undefined);
    // Unready first (closing is set), still serving: probes and callers see the agent leave before its listener does.
    if (server !== undefined) await drainDelay(options.drainDelayMs ?? 0, logger);
    // Requests in flight still need sandboxd, so the server goes first and the sandboxd pool last.
    await closeInOrder(
      'the node agent',
      [
        ['server', () => server?.close()],
        ['inventory publisher', () => publisher?.close()],
        ['node state', () => state.close()],
        ['token file watch', () => tokenWatch?.close()],
        ['sandboxd client', () => sandboxd.close()],
      ],
      logger,
    );
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

function sandboxdClientOf(
  options: NodeAgentOptions,
  token: AcceptedToken,
  tokenGraceMs: number,
  claimsInFlight: number,
): SandboxdClient {
  return new SandboxdClient({
    url: options.sandboxdUrl,
    rootToken: token.value,
    rootTokenGraceMs: tokenGraceMs,
    timeoutMs: options.sandboxdTimeoutMs ?? DEFAULTS.sandboxdTimeoutMs,
    claimTimeoutMs: options.sandboxdClaimTimeoutMs ?? options.sandboxdTimeoutMs ?? DEFAULTS.sandboxdClaimTimeoutMs,
    setPoolsTimeoutMs: options.sandboxdPoolsTimeoutMs ?? options.sandboxdTimeoutMs ?? DEFAULTS.sandboxdPoolsTimeoutMs,
    connections: options.sandboxdConnections ?? claimsInFlight + PER_SANDBOX_CONNECTIONS,
    ...(options.sandboxdControlConnections !== undefined
      ? { controlConnections: options.sandboxdControlConnections }
      : {}),
  });
}

/** With a token file: re-read it, and pass each new token to sandboxd too (the replaced one stays for the grace). */
function followTokenFile(
  options: NodeAgentOptions,
  token: AcceptedToken,
  sandboxd: SandboxdClient,
  tokenGraceMs: number,
  logger: Logger,
): TokenFileWatch | undefined {
  const file = options.tokenFile;
  if (file === undefined) return undefined;
  return watchTokenFile(file, options.tokenReloadIntervalMs ?? 10_000, {
    onChange: (value) => {
      token.set(value);
      sandboxd.setRootToken(token.value);
      logger.info('API token reloaded; the replaced one is still accepted, and tried with sandboxd, during the grace', {
        tokenFile: file,
        configured: token.configured,
        graceMs: tokenGraceMs,
      });
    },
    onError: (err) => logger.warn('cannot re-read the token file; keeping the last token', { tokenFile: file, err }),
  });
}

/** With an inventory writer: the publisher of this node's NodeInventory, advertising where the agent listens. */
function publisherOf(
  options: NodeAgentOptions,
  listening: HostPort,
  deps: {
    generations: GenerationGuard;
    state: NodeState;
    ownerAddress: OwnerAddress;
    sandboxd: SandboxdClient;
    logger: Logger;
    metrics: AgentMetrics;
  },
): InventoryPublisher | undefined {
  if (options.inventory === undefined || !options.nodeName) return undefined;
  const { state, logger } = deps;
  const advertise = options.advertiseAddress;
  return new InventoryPublisher({
    writer: options.inventory,
    nodeName: options.nodeName,
    address: typeof advertise === 'function' ? advertise(listening) : (advertise ?? formatHostPort(listening)),
    ...(options.capacity !== undefined ? { capacity: options.capacity } : {}),
    generations: deps.generations,
    currentInfo: (): NodeInfo | undefined => state.info,
    ownerAddress: deps.ownerAddress,
    readClaims: nodeClaimsReader(deps.sandboxd, logger),
    publishIntervalMs: options.publishIntervalMs ?? DEFAULTS.publishIntervalMs,
    minPublishGapMs: options.minPublishGapMs ?? DEFAULTS.minPublishGapMs,
    ...(options.publishRetryInitialMs !== undefined ? { retryInitialMs: options.publishRetryInitialMs } : {}),
    ...(options.publishRetryMaxMs !== undefined ? { retryMaxMs: options.publishRetryMaxMs } : {}),
    logger,
    metrics: deps.metrics,
  });
}

/** Why the agent is not ready (empty when it is). */
function notReadyOf(o: {
  closing: boolean;
  token: AcceptedToken;
  state: NodeState;
  publishes: boolean;
  publisher: InventoryPublisher | undefined;
}): string[] {
  const reasons: string[] = [];
  if (o.closing) reasons.push('shutting down');
  if (!o.token.configured) reasons.push('no API token configured');
  if (!o.state.answering) reasons.push(o.state.problem ?? 'sandboxd not answering');
  if (o.publishes && !o.publisher?.publishedOnce) {
    const error = o.publisher?.lastError;
    reasons.push(error ? `NodeInventory not published yet: ${error}` : 'NodeInventory not published yet');
  }
  return reasons;
}

/** Every change the NodeInventory shows (an applied generation, fresh info, the owner address) republishes it. */
function republishOnChange(
  sources: { generations: GenerationGuard; state: NodeState; ownerAddress: OwnerAddress; metrics: AgentMetrics },
  publisher: () => InventoryPublisher | undefined,
): void {
  const { generations, state, ownerAddress, metrics } = sources;
  generations.onApplied((generation) => {
    metrics.appliedGeneration(generation);
    publisher()?.changed();
  });
  state.onInfo((info) => {
    ownerAddress.learnFromInfo(info);
    publisher()?.changed();
  });
  ownerAddress.onChange(() => publisher()?.changed());
}

async function drainDelay(drainDelayMs: number, logger: Logger): Promise<void> {
  if (drainDelayMs <= 0) return;
  logger.info('unready; serving on for the drain delay', { drainDelayMs });
  await new Promise((resolve) => setTimeout(resolve, drainDelayMs));
}

function serveOptionsOf(options: NodeAgentOptions): ServeOptions {
  return {
    host: options.listen?.host ?? '127.0.0.1',
    port: options.listen?.port ?? 0,
    closeTimeoutMs: options.closeTimeoutMs ?? DEFAULTS.closeTimeoutMs,
  };
}
