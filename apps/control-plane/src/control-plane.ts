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
  SandboxEnvType,
  SandboxTemplateType,
  SandboxWarmPoolType,
  type CustomResourceDefinition,
  type KubeNode,
  type KubeObject,
  type KubePod,
  type NodeInventory,
  type SandboxEnv,
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
import type { SandboxClaimSettings } from './controllers/sandboxclaims/controller.js';
import type { ClaimJanitorSettings } from './controllers/sandboxclaims/janitor.js';
import { SandboxClaims } from './controllers/sandboxclaims/sandboxclaims.js';
import { EnvAutoscaler, KubeScaleTarget, type ScaleTarget } from './controllers/sandboxenvs/autoscaler.js';
import { SandboxEnvReconciler } from './controllers/sandboxenvs/reconciler.js';
import { KubeEnvStatusWriter, type EnvStatusWriter } from './controllers/sandboxenvs/status-writer.js';
import { watchSandboxEnvs } from './controllers/sandboxenvs/watch.js';
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
import { Federation, FEDERATION_DEFAULTS, type HubSettings } from './federation/federation.js';
import { EnvClaimRouter } from './federation/router.js';
import { ControlPlaneMetrics } from './metrics.js';
import type { ClaimService } from './provisioning/claim-service.js';
import type { ProvisioningSettings } from './provisioning/options.js';
import { createProvisioning, type ProvisioningPipeline } from './provisioning/pipeline.js';
import { createSandboxApi, type SandboxApi } from './aggregated/sandbox-api.js';
import type { SandboxAuthorizer } from './aggregated/server.js';
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
  /**
   * The claim pipeline the SandboxClaim controller uses instead of the one
   * built from `claims` (embedding, specs). With either, the leader also
   * serves SandboxClaims and runs the claim janitor.
   */
  claimService?: ClaimService;
  sandboxClaims?: { controller?: Partial<SandboxClaimSettings>; janitor?: Partial<ClaimJanitorSettings> };
  /** SandboxEnv status and federation; see FederationSettings. */
  federation?: FederationSettings;
  /** Default: a merge patch of the SandboxEnv status subresource. */
  envStatusWriter?: EnvStatusWriter;
  /** The Env autoscaler (leader-only): no scale-down until this long after a scale-up (default 60 s). */
  envScaleDownDelayMs?: number;
  /** Default: the SandboxWarmPool scale subresource. */
  scaleTarget?: ScaleTarget;
  /** Serve the Sandbox API (agents.x-k8s.io/v1beta1 sandboxes, behind an APIService) here; off when omitted. */
  sandboxApi?: SandboxApiServing;
}

export interface FederationSettings {
  /** This cluster's id; without it (or without `hub`) the cluster is alone and nothing is started. */
  clusterId?: string;
  /** The shared hub: multi-cluster mode when given together with clusterId. */
  hub?: HubSettings;
  /** Report / full-read interval (default 2 s); records live 3 × this unless ttlMs says otherwise. */
  intervalMs?: number;
  ttlMs?: number;
  /** The token peer clusters share to forward claims to each other. */
  token?: TokenSource;
}

export interface SandboxApiServing {
  listen: HostPort;
  /** PEM files; absent: a self-signed certificate made at start. */
  tls?: { certFile: string; keyFile: string };
  /** Extra DNS names for the self-signed certificate. */
  selfSignedNames?: string[];
  /** Default: SubjectAccessReviews. */
  authorizer?: SandboxAuthorizer;
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
  /** The SandboxClaim controller and claim janitor, when a claim pipeline was given. */
  readonly sandboxClaims: SandboxClaims | undefined;
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
  readonly envs: SandboxEnvReconciler;
  readonly autoscaler: EnvAutoscaler;
  readonly federation: Federation;
  /** The Sandbox API, when served. */
  readonly sandboxApi: SandboxApi | undefined;
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
  const envInformer = createInformer<SandboxEnv>(options.kubeConfig, SandboxEnvType, { logger: kubeLogger });
  const informers: Array<Informer<KubeObject>> = [pools, templates, inventories, envInformer, nodes, poolCrd, ...(agentPods ? [agentPods] : [])] as Array<Informer<KubeObject>>;
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

  // Every replica: each Env's local capacity (for its claim router); leader-only: status writes and reporting.
  const federationSettings = options.federation ?? {};
  const multiCluster = federationSettings.clusterId !== undefined && federationSettings.hub !== undefined;
  const federation = new Federation({
    clusterId: federationSettings.clusterId ?? FEDERATION_DEFAULTS.singleClusterId,
    ...(federationSettings.intervalMs !== undefined ? { intervalMs: federationSettings.intervalMs } : {}),
    ...(federationSettings.ttlMs !== undefined ? { ttlMs: federationSettings.ttlMs } : {}),
    ...(multiCluster && federationSettings.hub !== undefined ? { hub: { ...federationSettings.hub, claimsAdvertiseUrl: () => advertisedClaimsUrl(federationSettings.hub?.claimsAdvertiseUrl, claimsServer?.url) } } : {}),
    promRegistry: metrics.registry,
    logger: logger.child({ subsystem: 'federation' }),
  });
  const autoscaler = new EnvAutoscaler({
    target: options.scaleTarget ?? new KubeScaleTarget(options.kubeConfig),
    clock,
    ...(options.envScaleDownDelayMs !== undefined ? { scaleDownDelayMs: options.envScaleDownDelayMs } : {}),
    logger: logger.child({ controller: 'env-autoscaler' }),
  });
  const envs = new SandboxEnvReconciler({
    envs: envInformer.lister,
    pools: pools.lister,
    templates: templates.lister,
    inventories: inventories.lister,
    writer: options.envStatusWriter ?? new KubeEnvStatusWriter(options.kubeConfig),
    ...(multiCluster ? { foreignMembers: (ns: string, env: string) => federation.foreignMembers(ns, env) } : {}),
    onCapacity: (records) => federation.setLocal(records),
    onLeaderRun: (runs, counts, signal) => autoscaler.run(runs, counts, (ns, name) => pools.lister.get(ns, name), signal),
    clock,
    staleAfterMs: reconciler.settings.staleAfterMs,
    intervalMs: Math.min(federation.intervalMs, reconciler.settings.intervalMs),
    logger: logger.child({ controller: 'sandboxenvs' }),
  });
  watchSandboxEnvs(envs, envInformer, pools, templates, inventories);

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
  const envRouter = claims === undefined ? undefined : new EnvClaimRouter({
    claims,
    index: claims.index,
    envs: envInformer.lister,
    registry: federation.registry,
    localRecords: () => envs.records,
    ...(multiCluster ? { claimsUrlOf: (cluster: string) => federation.claimsUrlOf(cluster) } : {}),
    ...(federationSettings.token !== undefined ? { federationToken: federationSettings.token } : {}),
    logger: logger.child({ subsystem: 'env-claims' }),
    metrics: federation.metrics,
  });
  const claimApi = claims === undefined ? undefined : createClaimApi({
    claims,
    reviewer: claimsOptions?.reviewer ?? new KubeAccessReviewer({ transport: transportFor(options.kubeConfig) }),
    logger: logger.child({ subsystem: 'claim-api' }),
    ...(envRouter !== undefined ? { envs: envRouter } : {}),
    ...(multiCluster && federationSettings.token !== undefined ? { federationToken: federationSettings.token } : {}),
  });
  let claimsServer: HttpServer | undefined;
  // Leader-only: the SandboxClaim controller and the claim janitor, over whichever pipeline there is.
  const claimService: ClaimService | undefined = options.claimService ?? claims;
  const sandboxClaims = claimService === undefined ? undefined : new SandboxClaims({
    kubeConfig: options.kubeConfig,
    claims: claimService,
    pools,
    templates,
    inventories,
    addresses,
    token,
    registry: metrics.registry,
    logger,
    kubeLogger,
    clock,
    ...(options.sandboxClaims?.controller !== undefined ? { controller: options.sandboxClaims.controller } : {}),
    ...(options.sandboxClaims?.janitor !== undefined ? { janitor: options.sandboxClaims.janitor } : {}),
  });
  if (sandboxClaims !== undefined) informers.push(sandboxClaims.informer as Informer<KubeObject>);
  const sandboxApi = options.sandboxApi === undefined ? undefined : createSandboxApi({
    ...options.sandboxApi,
    transport: transportFor(options.kubeConfig),
    inventories,
    pools,
    templates,
    ...(claims !== undefined && claimsOptions !== undefined ? { claims: { pipeline: claims, redisUrl: claimsOptions.redisUrl, eventsKey: claims.claimEventsKey } } : {}),
    token,
    addresses,
    registry: metrics.registry,
    logger: logger.child({ subsystem: 'sandbox-api' }),
  });

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
    // The driver does not wait for the SandboxClaim cache; the SandboxClaim controller waits for it itself.
    void sandboxClaims?.lead(signal);
    try {
      await Promise.all(informers.filter((informer) => informer !== sandboxClaims?.informer).map((informer) => informer.waitForSync(signal)));
    } catch {
      return; // leadership ended before the caches filled
    }
    reconciler.startDriving(signal);
    envs.startLeading();
    federation.startReporting();
  };

  const stopLeading = (): void => {
    leading = false;
    metrics.leading(false);
    reconciler.stopDriving();
    void sandboxClaims?.stopLeading();
    envs.stopLeading();
    void federation.stopReporting();
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
    // The Env runs read the caches: the first waits for them, later ones see them filled.
    void Promise.all(informers.map((informer) => informer.waitForSync())).then(() => envs.start(), () => undefined);
    if (multiCluster) await federation.start();
    else logger.info('single cluster: federation is off (it needs both --cluster-id and --federation-redis-url); nothing is reported or watched');
    if (claims !== undefined && claimApi !== undefined) {
      await claims.start();
      const listen = claimsOptions?.listen;
      if (listen !== undefined) claimsServer = await serveApp(claimApi, { host: listen.host, port: listen.port, ...(claimsOptions?.tls !== undefined ? { tls: claimsOptions.tls } : {}) });
    }
    await sandboxApi?.start();
    if (token() !== undefined) campaign();
    else logger.error('no fleet token configured (--token-file or WARMPOOL_API_TOKEN): not campaigning for leadership, pushing nothing, reporting not ready');
    tokenWatch = setInterval(followToken, 1_000);
    tokenWatch.unref();
    logger.info('control plane started', {
      identity, namespace, lease: leaseName, url: server?.url ?? null, claimsUrl: claimsServer?.url ?? null, sandboxApiUrl: sandboxApi?.url ?? null, ...reconciler.settings,
    });
  };

  /** Every step runs even when one before it throws; the failures are logged. */
  const close = async (): Promise<void> => {
    clearInterval(tokenWatch);
    const steps: Array<[string, () => Promise<unknown>]> = [
      // Stop pushing first, then hand the lease over so a standby takes over at once.
      ['leadership', resign],
      ['reconciler', () => reconciler.close()],
      ['sandbox claims', async () => sandboxClaims?.stopLeading()],
      ['sandboxenvs', () => envs.close()],
      ['federation', () => federation.close()],
      // Stop taking claims, then answer the ones enqueued (they need the caches and Redis).
      ['claim API', async () => claimsServer?.close()],
      ['Sandbox API', async () => sandboxApi?.close()],
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
    sandboxClaims,
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
    envs,
    autoscaler,
    federation,
    sandboxApi,
    notReadyReasons,
    ready: () => notReadyReasons().length === 0,
    isLeader: () => leading && reconciler.driving,
    start: () => (started ??= start()),
    close: () => (closing ??= (started ?? Promise.resolve()).catch(() => undefined).then(close)),
  };
}

/**
 * Where peers reach this cluster's claim API: the URL given, else the claim
 * API's own URL when it listens on one address (a wildcard one is not an
 * address a peer can use).
 */
function advertisedClaimsUrl(given: string | (() => string | undefined) | undefined, bound: string | undefined): string | undefined {
  const url = typeof given === 'function' ? given() : given;
  if (url !== undefined) return url;
  if (bound === undefined) return undefined;
  const host = new URL(bound).hostname;
  return host === '0.0.0.0' || host === '[::]' ? undefined : bound;
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
