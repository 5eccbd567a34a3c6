// The control plane as a library: informers over the three kinds (and the
// Nodes and agent pods that vouch for agents' addresses), the
// warm-pool driver, leader election, and the health/metrics server, wired
// together with everything injectable (kubeconfig, logger, clock, pool
// setter), so main.ts, the e2e stack and benchmarks all build it the same way.
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  CustomResourceDefinitionType,
  KubeNodeType,
  KubePodType,
  NodeInventoryType,
  SANDBOX_WARM_POOL_CRD,
  SandboxTemplateType,
  SandboxWarmPoolType,
  type CustomResourceDefinition,
  type KubeNode,
  type KubeObject,
  type KubePod,
  type NodeInventory,
  type SandboxTemplate,
  type SandboxWarmPool,
} from '@warmpool/api';
import { createInformer, LeaderElector, NotLeaderError, transportFor, type Informer, type Lease } from '@warmpool/kube';
import { serveApp, silentLogger, type HostPort, type HttpServer, type Logger } from '@warmpool/runtime';
import type { Hono } from 'hono';
import type { Registry } from 'prom-client';
import { HttpPoolSetter } from './agents/http-pool-setter.js';
import type { PoolSetter } from './agents/pool-setter.js';
import { systemClock, type Clock } from './clock.js';
import { reportedSig } from './controllers/warmpool/desired.js';
import { KubeEventRecorder, type EventRecorder } from './controllers/warmpool/events.js';
import { addressCheckOf, nodeAddressesChanged, type AddressCheck, podPlacementChanged, slimNode, slimPod } from './controllers/warmpool/node-addresses.js';
import type { WarmPoolDriverSettings } from './controllers/warmpool/options.js';
import { WarmPoolReconciler } from './controllers/warmpool/reconciler.js';
import { describeFields, statusFieldsOf, type StatusFields } from './controllers/warmpool/status-schema.js';
import { KubePoolStatusWriter, type PoolStatusWriter } from './controllers/warmpool/status-writer.js';
import { GenerationSource, type EpochStore } from './generation/generation.js';
import { LeaseEpochStore, UnelectedLease } from './generation/lease-epoch-store.js';
import { KubeAccessReviewer, type AccessReviewer } from './http/claims/access-review.js';
import { createClaimApi } from './http/claims/app.js';
import { createHealthApp } from './http/health.js';
import { ControlPlaneMetrics } from './metrics.js';
import type { ProvisioningSettings } from './provisioning/options.js';
import { createProvisioning, type ProvisioningPipeline } from './provisioning/pipeline.js';
import { staticToken, type TokenSource } from './token.js';

export const COMPONENT = 'warmpool-control-plane';

export interface ControlPlaneOptions {
  kubeConfig: KubeConfig;
  /** The fleet token, or where to read it at each call. None (or empty): fail-closed, see the README. */
  token: TokenSource | string | undefined;
  /** Where the election Lease (which carries the generation epoch) lives (default `default`). */
  namespace?: string;
  /** This replica's identity in the Lease (default hostname-pid). */
  identity?: string;
  /** The election Lease, which also carries the generation epoch (default `warmpool-control-plane`); `<leaseName>-generation` is only read, for upgrades. */
  leaseName?: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** false: drive at once without a Lease (a single replica by construction, e.g. a benchmark). Default true. */
  leaderElection?: boolean;
  driver?: Partial<WarmPoolDriverSettings>;
  /** Timeout of each SetPools / probe attempt (default 2 s). */
  setPoolsTimeoutMs?: number;
  /** Attempts per SetPools call (default 3). */
  setPoolsAttempts?: number;
  /** Serve /healthz, /readyz and /metrics here; nothing is served when omitted. */
  listen?: HostPort;
  /** For warmpool_build_info. */
  version?: string;
  /** Also serve /healthz and /readyz (only) here: the probe port. */
  probeListen?: HostPort;
  /** /healthz fails when, while leading, no reconcile finished for this long (default 2 min). */
  stallTimeoutMs?: number;
  logger?: Logger;
  clock?: Clock;
  /** Metrics go here (default: a registry of the control plane's own). */
  registry?: Registry;
  /** Default: HTTP to each agent's spec.address. */
  poolSetter?: PoolSetter;
  /** Default: status server-side applied to the apiserver. */
  statusWriter?: PoolStatusWriter;
  /** Default: core/v1 Events. */
  events?: EventRecorder;
  /** Default: an annotation on the election Lease, written only while holding it. */
  epochStore?: EpochStore;
  /**
   * The node agents' pods (label selector, in `namespace`): an agent advertising its pod IP is
   * called there only while a pod of these runs on its node with that IP. Without it, only the
   * Node's own status.addresses vouch for an agent's address.
   */
  agentPodSelector?: string;
  /** Provisioning (claims): off when omitted. Every replica runs it. */
  claims?: ClaimsOptions;
}

export interface ClaimsOptions {
  redisUrl: string;
  /** Serve the HTTP claim API here; not served when omitted (the pipeline still runs, e.g. for SandboxClaims). */
  listen?: HostPort;
  tls?: { cert: string | Buffer; key: string | Buffer };
  settings?: Partial<ProvisioningSettings>;
  /** Key prefix in Redis (default `warmpool`). */
  prefix?: string;
  /** Default: TokenReview + SubjectAccessReview on the apiserver. */
  reviewer?: AccessReviewer;
}

export interface ControlPlane {
  readonly identity: string;
  readonly metrics: ControlPlaneMetrics;
  readonly registry: Registry;
  /** The health/metrics app (served at `url` when `listen` was given). */
  readonly app: Hono;
  readonly reconciler: WarmPoolReconciler;
  /** The bound URL of the health server, once started with `listen`. */
  readonly url: string | undefined;
  /** The bound URL of the probe-only server, once started with `probeListen`. */
  readonly probeUrl: string | undefined;
  /** Why /healthz fails (empty when live): a wedged reconcile loop while leading. */
  notLiveReasons(): string[];
  /** The claim pipeline (a ClaimService), when provisioning is on. */
  readonly claims: ProvisioningPipeline | undefined;
  /** The bound URL of the claim API, once started with `claims.listen`. */
  readonly claimsUrl: string | undefined;
  /** Why this replica is not ready (empty when it is): no token, caches not synced. */
  notReadyReasons(): string[];
  ready(): boolean;
  /** True while this replica holds the lease and drives. */
  isLeader(): boolean;
  start(): Promise<void>;
  /** Stops pushing at once, releases the lease (a standby takes over without waiting for expiry), closes everything. */
  close(): Promise<void>;
}

export const DEFAULT_LEASE_NAME = 'warmpool-control-plane';

export function defaultIdentity(): string {
  return `${hostname()}-${process.pid}`;
}

export function createControlPlane(options: ControlPlaneOptions): ControlPlane {
  const logger = options.logger ?? silentLogger;
  const clock = options.clock ?? systemClock;
  const token: TokenSource = typeof options.token === 'function' ? options.token : staticToken(options.token);
  const namespace = options.namespace ?? 'default';
  const identity = options.identity ?? defaultIdentity();
  const leaseName = options.leaseName ?? DEFAULT_LEASE_NAME;
  const metrics = new ControlPlaneMetrics(options.registry, { ...(options.version !== undefined ? { version: options.version } : {}) });
  const kubeLogger = logger.child({ subsystem: 'kube' });

  const pools = createInformer<SandboxWarmPool>(options.kubeConfig, SandboxWarmPoolType, { logger: kubeLogger });
  const templates = createInformer<SandboxTemplate>(options.kubeConfig, SandboxTemplateType, { logger: kubeLogger });
  const inventories = createInformer<NodeInventory>(options.kubeConfig, NodeInventoryType, { logger: kubeLogger });
  // Nodes and pods are big and there is one per node: listed in pages, cached cut down to what the check reads.
  const nodes = createInformer<KubeNode>(options.kubeConfig, KubeNodeType, { logger: kubeLogger, transform: slimNode, pageSize: 500 });
  const agentPods = options.agentPodSelector
    ? createInformer<KubePod>(options.kubeConfig, KubePodType, { logger: kubeLogger, namespace, labelSelector: options.agentPodSelector, transform: slimPod, pageSize: 500 })
    : undefined;
  // The one CRD whose schema decides which status fields can be written (ours or upstream's).
  const poolCrd = createInformer<CustomResourceDefinition>(options.kubeConfig, CustomResourceDefinitionType, {
    logger: kubeLogger, fieldSelector: `metadata.name=${SANDBOX_WARM_POOL_CRD}`,
  });
  const informers: Array<Informer<KubeObject>> = [pools, templates, inventories, nodes, poolCrd, ...(agentPods ? [agentPods] : [])] as Array<Informer<KubeObject>>;
  let poolStatusFields: StatusFields = 'any';

  const setter = options.poolSetter ?? new HttpPoolSetter({
    token,
    ...(options.setPoolsTimeoutMs !== undefined ? { timeoutMs: options.setPoolsTimeoutMs } : {}),
    ...(options.setPoolsAttempts !== undefined ? { attempts: options.setPoolsAttempts } : {}),
  });
  const events = options.events ?? new KubeEventRecorder({ kubeConfig: options.kubeConfig, component: COMPONENT, instance: identity, logger, clock });
  let elector: LeaderElector | undefined;
  // The epoch is written through whichever elector is campaigning now (there is a new one after each resign).
  const heldLease = {
    updateHeld: (mutate: (lease: Lease) => Lease, signal?: AbortSignal): Promise<Lease> => {
      if (elector === undefined) return Promise.reject(new NotLeaderError('not campaigning'));
      return elector.updateHeld(mutate, signal);
    },
  };
  const lease = options.leaderElection === false ? new UnelectedLease(options.kubeConfig, namespace, leaseName) : heldLease;
  const generations = new GenerationSource(options.epochStore ?? new LeaseEpochStore({ lease, kubeConfig: options.kubeConfig, namespace, legacyName: `${leaseName}-generation` }));
  // Where an agent may be called with the fleet token: at an address its own Node vouches for (issue 8 §3).
  const addresses = (): AddressCheck => addressCheckOf({
    node: (name) => nodes.lister.get(name),
    ...(agentPods ? { agentPods: () => agentPods.lister.list() } : {}),
  });
  const reconciler = new WarmPoolReconciler({
    pools: pools.lister,
    templates: templates.lister,
    inventories: inventories.lister,
    addresses,
    setter,
    statusWriter: options.statusWriter ?? new KubePoolStatusWriter(options.kubeConfig, { fields: () => poolStatusFields }),
    events,
    generations,
    token,
    metrics,
    logger: logger.child({ controller: 'warmpool' }),
    clock,
    // Standalone (no election) always leads; otherwise ask the elector campaigning now.
    leadership: {
      holding: () => options.leaderElection === false || elector?.holding() === true,
      confirm: async (signal) => options.leaderElection === false || (elector !== undefined && (await elector.confirm(signal))),
    },
    ...options.driver,
  });
  watchForChanges(reconciler, pools, templates, inventories);
  watchAddressVouchers(reconciler, nodes, agentPods);
  followStatusSchema(poolCrd, (crd) => {
    const fields = statusFieldsOf(crd);
    if (describeFields(fields) === describeFields(poolStatusFields)) return;
    poolStatusFields = fields;
    const conditions = fields === 'any' || fields.has('conditions');
    logger[conditions ? 'info' : 'warn'](conditions
      ? 'SandboxWarmPool status schema read: writing every status field'
      : 'the installed SandboxWarmPool CRD declares no status.conditions (upstream\'s schema): writing only the fields it declares', {
      crd: SANDBOX_WARM_POOL_CRD, fields: describeFields(fields),
    });
    reconciler.poke('status schema changed');
  });

  // Every replica: the claim pipeline (its batch workers included) and the claim API. Leader-only: the driver above.
  const claimsOptions = options.claims;
  const claims = claimsOptions === undefined ? undefined : createProvisioning({
    redisUrl: claimsOptions.redisUrl,
    replica: identity,
    ...(claimsOptions.prefix !== undefined ? { prefix: claimsOptions.prefix } : {}),
    ...claimsOptions.settings,
    pools,
    templates,
    inventories,
    driverViews: () => (reconciler.driving ? reconciler.nodes() : []),
    addresses,
    staleAfterMs: reconciler.settings.staleAfterMs,
    token,
    registry: metrics.registry,
    clock,
    logger: logger.child({ subsystem: 'provisioning' }),
  });
  const claimApi = claims === undefined ? undefined : createClaimApi({
    claims,
    reviewer: claimsOptions?.reviewer ?? new KubeAccessReviewer({ transport: transportFor(options.kubeConfig) }),
    logger: logger.child({ subsystem: 'claim-api' }),
  });
  let claimsServer: HttpServer | undefined;

  let server: HttpServer | undefined;
  let probeServer: HttpServer | undefined;
  let tokenWatch: NodeJS.Timeout | undefined;
  let started: Promise<void> | undefined;
  let closing: Promise<void> | undefined;
  let leading = false;
  let standalone: AbortController | undefined;

  const notReadyReasons = (): string[] => {
    const reasons: string[] = [];
    if (token() === undefined) reasons.push('no fleet token configured (--token-file or WARMPOOL_API_TOKEN): fail-closed, nothing is pushed');
    for (const informer of informers) if (!informer.hasSynced()) reasons.push(`${informer.type.kind} cache not synced yet`);
    reasons.push(...reconciler.notReadyReasons());
    return reasons;
  };

  const stallTimeoutMs = options.stallTimeoutMs ?? 120_000;
  const notLiveReasons = (): string[] => {
    const stalled = reconciler.stalledMs(clock.now());
    if (stalled === undefined || stalled <= stallTimeoutMs) return [];
    return [`leading, but no reconcile finished for ${Math.round(stalled / 1000)} s (--stall-timeout ${Math.round(stallTimeoutMs / 1000)} s): the loop is wedged`];
  };
  const describe = (): Record<string, unknown> => ({ identity, leader: leading && reconciler.driving, leaseHolder: elector?.leader ?? null });
  const claimsNotReadyReasons = claims !== undefined ? { claimsNotReadyReasons: () => claims.notReadyReasons() } : {};
  const app = createHealthApp({ metrics, notReadyReasons, notLiveReasons, describe, ...claimsNotReadyReasons });
  const probeApp = createHealthApp({ notReadyReasons, notLiveReasons, describe });

  const drive = async (signal: AbortSignal): Promise<void> => {
    leading = true;
    metrics.leading(true);
    logger.info('leading: driving the node agents', { identity });
    try {
      await Promise.all(informers.map((informer) => informer.waitForSync(signal)));
    } catch {
      return; // leadership ended before the caches filled
    }
    reconciler.startDriving(signal);
  };

  const stopLeading = (): void => {
    leading = false;
    metrics.leading(false);
    reconciler.stopDriving();
  };

  const campaign = (): void => {
    if (closing !== undefined || elector !== undefined || standalone !== undefined) return;
    if (options.leaderElection === false) {
      standalone = new AbortController();
      void drive(standalone.signal);
      return;
    }
    elector = new LeaderElector({
      kubeConfig: options.kubeConfig,
      namespace,
      name: leaseName,
      identity,
      ...(options.leaseDurationMs !== undefined ? { leaseDurationMs: options.leaseDurationMs } : {}),
      ...(options.renewDeadlineMs !== undefined ? { renewDeadlineMs: options.renewDeadlineMs } : {}),
      ...(options.retryPeriodMs !== undefined ? { retryPeriodMs: options.retryPeriodMs } : {}),
      logger: kubeLogger,
      onStartedLeading: drive,
      onStoppedLeading: () => {
        if (leading) logger.warn('lost leadership: stopped driving', { identity });
        stopLeading();
      },
      onNewLeader: (holder) => {
        if (holder !== identity) logger.info('another replica leads', { leader: holder });
      },
    });
    elector.start();
  };

  /** Stops driving and campaigning; a held lease is released so a standby takes over at once. */
  const resign = async (): Promise<void> => {
    stopLeading();
    standalone?.abort();
    standalone = undefined;
    const stopping = elector;
    elector = undefined;
    await stopping?.close({ release: true });
  };

  // Fail-closed: a replica without the token must not hold the lease and sit idle while a healthy one waits.
  const followToken = (): void => {
    const present = token() !== undefined;
    if (present && elector === undefined && standalone === undefined) {
      logger.info('fleet token present: campaigning for leadership');
      campaign();
    } else if (!present && (elector !== undefined || standalone !== undefined)) {
      logger.error('fleet token gone: stepping down (fail-closed); nothing is pushed until it is back');
      void resign();
    }
  };

  const start = async (): Promise<void> => {
    if (options.listen !== undefined) server = await serveApp(app, { host: options.listen.host, port: options.listen.port });
    if (options.probeListen !== undefined) probeServer = await serveApp(probeApp, { host: options.probeListen.host, port: options.probeListen.port });
    for (const informer of informers) informer.start();
    if (claims !== undefined && claimApi !== undefined) {
      await claims.start();
      const listen = claimsOptions?.listen;
      if (listen !== undefined) claimsServer = await serveApp(claimApi, { host: listen.host, port: listen.port, ...(claimsOptions?.tls !== undefined ? { tls: claimsOptions.tls } : {}) });
    }
    if (token() !== undefined) campaign();
    else logger.error('no fleet token configured (--token-file or WARMPOOL_API_TOKEN): not campaigning for leadership, pushing nothing, reporting not ready');
    tokenWatch = setInterval(followToken, 1_000);
    tokenWatch.unref();
    logger.info('control plane started', {
      identity, namespace, lease: leaseName, url: server?.url ?? null, claimsUrl: claimsServer?.url ?? null, ...reconciler.settings,
    });
  };

  /** Every step runs even when one before it throws; the failures are logged. */
  const close = async (): Promise<void> => {
    clearInterval(tokenWatch);
    const steps: Array<[string, () => Promise<unknown>]> = [
      // Stop pushing first, then hand the lease over so a standby takes over at once.
      ['leadership', resign],
      ['reconciler', () => reconciler.close()],
      // Stop taking claims, then answer the ones enqueued (they need the caches and Redis).
      ['claim API', async () => claimsServer?.close()],
      ['claims', async () => claims?.close()],
      ['informers', () => Promise.all(informers.map((informer) => informer.close()))],
      ['pool setter', () => setter.close()],
      ['events', () => events.close()],
      ['health server', async () => server?.close()],
      ['probe server', async () => probeServer?.close()],
    ];
    for (const [name, step] of steps) {
      try {
        await step();
      } catch (err) {
        logger.warn('closing the control plane: a step failed', { step: name, err });
      }
    }
  };

  return {
    identity,
    metrics,
    registry: metrics.registry,
    app,
    reconciler,
    get url(): string | undefined {
      return server?.url;
    },
    get probeUrl(): string | undefined {
      return probeServer?.url;
    },
    notLiveReasons,
    claims,
    get claimsUrl(): string | undefined {
      return claimsServer?.url;
    },
    notReadyReasons,
    ready: () => notReadyReasons().length === 0,
    isLeader: () => leading && reconciler.driving,
    start: () => (started ??= start()),
    close: () => (closing ??= (started ?? Promise.resolve()).catch(() => undefined).then(close)),
  };
}

/**
 * Informer events poke the one reconcile. Updates that cannot change what is
 * pushed or written (a pool's own status write, a warm count moving on a
 * healthy node) are skipped; the periodic sample covers counts.
 */
function watchForChanges(
  reconciler: WarmPoolReconciler,
  pools: Informer<SandboxWarmPool>,
  templates: Informer<SandboxTemplate>,
  inventories: Informer<NodeInventory>,
): void {
  pools.addEventHandler({
    onAdd: () => reconciler.poke('pool added'),
    onUpdate: (old, next) => {
      if (old === next) return;
      if (old.metadata?.generation !== next.metadata?.generation || old.metadata?.deletionTimestamp !== next.metadata?.deletionTimestamp) reconciler.poke('pool changed');
    },
    onDelete: () => reconciler.poke('pool deleted'),
  });
  templates.addEventHandler({
    onAdd: () => reconciler.poke('template added'),
    onUpdate: (old, next) => {
      if (old === next) return;
      // The opt-in and net/size live in annotations, which do not bump the generation.
      if (old.metadata?.generation !== next.metadata?.generation || JSON.stringify(old.metadata?.annotations ?? {}) !== JSON.stringify(next.metadata?.annotations ?? {})) {
        reconciler.poke('template changed');
      }
    },
    onDelete: () => reconciler.poke('template deleted'),
  });
  inventories.addEventHandler({
    onAdd: () => reconciler.poke('node added'),
    onUpdate: (old, next) => {
      if (old === next) return;
      const name = next.metadata?.name ?? '';
      if (!reconciler.inPlacement(name) || reconciler.unissued(next.status?.appliedGeneration) || inventoryChangeMatters(old, next, () => reconciler.readsInventoryOf(name))) {
        reconciler.poke('node changed');
      }
    },
    onDelete: () => reconciler.poke('node deleted'),
  });
}

/** The SandboxWarmPool CRD as it is now (undefined once deleted), at start and on every change. */
function followStatusSchema(crds: Informer<CustomResourceDefinition>, onSchema: (crd: CustomResourceDefinition | undefined) => void): void {
  crds.addEventHandler({
    onAdd: (crd) => onSchema(crd),
    onUpdate: (old, next) => {
      if (old !== next) onSchema(next);
    },
    onDelete: () => onSchema(undefined),
  });
}

/** A Node's addresses, or an agent pod's IP or node, decide which agent addresses are called. */
function watchAddressVouchers(reconciler: WarmPoolReconciler, nodes: Informer<KubeNode>, agentPods: Informer<KubePod> | undefined): void {
  nodes.addEventHandler({
    onAdd: () => reconciler.poke('node object added'),
    onUpdate: (old, next) => {
      if (old !== next && nodeAddressesChanged(old, next)) reconciler.poke('node addresses changed');
    },
    onDelete: () => reconciler.poke('node object deleted'),
  });
  agentPods?.addEventHandler({
    onAdd: () => reconciler.poke('agent pod added'),
    onUpdate: (old, next) => {
      if (old !== next && podPlacementChanged(old, next)) reconciler.poke('agent pod changed');
    },
    onDelete: () => reconciler.poke('agent pod deleted'),
  });
}

/**
 * Whether an inventory update can change what a run decides. After every
 * fan-out each node republishes its inventory with the targets it was just
 * pushed and their generation: one event per node within seconds, and a full
 * reconcile for each (coalesced, back to back) would keep the loop busy
 * without changing anything. So: the new
 * appliedGeneration alone matters only when no leader issued it (the node
 * leaves placement; see unissued() at the call), and new targets matter only
 * when runs see the node through its inventory, i.e. no fresher answer of its
 * agent stands in for it (the probe every interval compares those).
 */
function inventoryChangeMatters(old: NodeInventory, next: NodeInventory, readsInventory: () => boolean): boolean {
  const a = old.status ?? {};
  const b = next.status ?? {};
  if (old.spec?.address !== next.spec?.address) return true;
  if (a.capacity !== b.capacity || a.draining !== b.draining || a.atCapacity !== b.atCapacity) return true;
  if (b.capacity !== undefined && a.claimed !== b.claimed) return true;
  return readsInventory() && reportedSig(a.pools ?? []) !== reportedSig(b.pools ?? []);
}
