// The control plane as a library, composed: it builds each subsystem through
// its own factory and decides who runs what, nothing more. It composes
//  - the warm-pool driver (controllers/warmpool/driver.ts: informers,
//    reconciler, watch wiring), its pool setter, events and generations;
//  - the SandboxEnv controller and autoscaler (controllers/sandboxenvs);
//  - the SandboxWarmPoolAutoscaler (controllers/pool-autoscaler), with claims;
//  - federation (federation/setup.ts);
//  - the claim pipeline (provisioning/pipeline.ts), the claim API
//    (http/claims/served.ts) and the SandboxClaim controller and janitor
//    (controllers/sandboxclaims);
//  - the Sandbox API (aggregated/sandbox-api.ts);
//  - leader election (leadership/campaign.ts), and the health/metrics
//    servers (http/health.ts);
// with everything injectable (kubeconfig, logger, clock, token source, pool
// setter, writers, event recorder, epoch store, registry), so main.ts, the e2e
// stack and benchmarks all build it the same way. Which work is leader-only
// and which runs in every replica is listed once, above drive().
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import type { KubeObject } from '@warmpool/api';
import { transportFor, type Informer } from '@warmpool/kube';
import {
  serveApp,
  silentLogger,
  type HostPort,
  type HttpServer,
  type Logger,
  systemClock,
  type Clock,
} from '@warmpool/runtime';
import type { Hono } from 'hono';
import type { Registry } from 'prom-client';
import { HttpPoolSetter } from './agents/http-pool-setter.js';
import type { PoolSetter } from './agents/pool-setter.js';
import type { SandboxClaimSettings } from './controllers/sandboxclaims/controller.js';
import type { ClaimJanitorSettings } from './controllers/sandboxclaims/janitor.js';
import type { PoolAutoscalerSettings } from './controllers/pool-autoscaler/controller.js';
import { PoolAutoscaler } from './controllers/pool-autoscaler/pool-autoscaler.js';
import { SandboxClaims } from './controllers/sandboxclaims/sandboxclaims.js';
import type { EnvAutoscaler, ScaleTarget } from './controllers/sandboxenvs/autoscaler.js';
import type { SandboxEnvReconciler } from './controllers/sandboxenvs/reconciler.js';
import { createSandboxEnvs } from './controllers/sandboxenvs/sandboxenvs.js';
import type { EnvStatusWriter } from './controllers/sandboxenvs/status-writer.js';
import { createWarmPoolDriver } from './controllers/warmpool/driver.js';
import { KubeEventRecorder, type EventRecorder } from './controllers/warmpool/events.js';
import type { WarmPoolDriverSettings } from './controllers/warmpool/options.js';
import type { WarmPoolReconciler } from './controllers/warmpool/reconciler.js';
import type { PoolStatusWriter } from './controllers/warmpool/status-writer.js';
import { GenerationSource, type EpochStore } from './generation/generation.js';
import { LeaseEpochStore, UnelectedLease } from './generation/lease-epoch-store.js';
import type { AccessReviewer } from '@warmpool/kube';
import { createServedClaimApi } from './http/claims/served.js';
import { createHealthApp, replicaHealth } from './http/health.js';
import { Campaign } from './leadership/campaign.js';
import type { Federation } from './federation/federation.js';
import { createFederation, type FederationSettings } from './federation/setup.js';
import { ControlPlaneMetrics } from './metrics.js';
import type { ClaimService } from './provisioning/claim-service.js';
import type { ProvisioningSettings } from './provisioning/options.js';
import { createProvisioning, type ProvisioningPipeline } from './provisioning/pipeline.js';
import type { RedisSettings } from './redis/connection.js';
import { createSandboxApi, type SandboxApi } from './aggregated/sandbox-api.js';
import type { SandboxAuthorizer } from './aggregated/server.js';
import { staticToken, type TokenSource } from './token.js';

export type { FederationSettings } from './federation/setup.js';

export const COMPONENT = 'warmpool-control-plane';

export interface ControlPlaneOptions {
  kubeConfig: KubeConfig;
  /** The fleet token, or where to read it at each call. None (or empty): fail-closed, see the README. */
  token: TokenSource | string | undefined;
  /** Where the election Lease (which carries the generation epoch) lives (default `default`). */
  namespace?: string;
  /** This replica's identity in the Lease (default hostname-pid). */
  identity?: string;
  /**
   * The election Lease, which also carries the generation epoch (default `warmpool-control-plane`);
   * `<leaseName>-generation` is only read, for upgrades.
   */
  leaseName?: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** false: drive at once without a Lease (a single replica by construction, e.g. a benchmark). Default true. */
  leaderElection?: boolean;
  driver?: Partial<WarmPoolDriverSettings>;
  /** Timeout of each SetPools / probe attempt (default 2 s). */
  setPoolsTimeoutMs?: number;
  /** Each SetPools push attempt (default 60 s: a real sandboxd answers once trimmed VMs are gone). */
  setPoolsPushTimeoutMs?: number;
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
  /** The SandboxWarmPoolAutoscaler controller (leader-only, with claims): its tick and initial lead time. */
  poolAutoscaler?: Partial<PoolAutoscalerSettings>;
  /** Serve the Sandbox API (agents.x-k8s.io/v1beta1 sandboxes, behind an APIService) here; off when omitted. */
  sandboxApi?: SandboxApiServing;
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
  /** The claim pipeline's Redis (also the Sandbox API's claim feed). */
  redis: RedisSettings;
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
  /** The SandboxWarmPoolAutoscaler controller and claim recorder, when provisioning is on. */
  readonly poolAutoscaler: PoolAutoscaler | undefined;
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
  const metrics = new ControlPlaneMetrics(options.registry, {
    ...(options.version !== undefined ? { version: options.version } : {}),
  });
  const kubeLogger = logger.child({ subsystem: 'kube' });

  const setter =
    options.poolSetter ??
    new HttpPoolSetter({
      token,
      ...(options.setPoolsTimeoutMs !== undefined ? { timeoutMs: options.setPoolsTimeoutMs } : {}),
      ...(options.setPoolsPushTimeoutMs !== undefined ? { pushTimeoutMs: options.setPoolsPushTimeoutMs } : {}),
      ...(options.setPoolsAttempts !== undefined ? { attempts: options.setPoolsAttempts } : {}),
    });
  const events =
    options.events ??
    new KubeEventRecorder({ kubeConfig: options.kubeConfig, component: COMPONENT, instance: identity, logger, clock });
  const campaign = new Campaign({
    kubeConfig: options.kubeConfig,
    namespace,
    leaseName,
    identity,
    leaseDurationMs: options.leaseDurationMs,
    renewDeadlineMs: options.renewDeadlineMs,
    retryPeriodMs: options.retryPeriodMs,
    elect: options.leaderElection !== false,
    token,
    closing: () => closing !== undefined,
    onStartedLeading: (signal) => drive(signal),
    onStoppedLeading: (why) => {
      if (why === 'lost' && leading) logger.warn('lost leadership: stopped driving', { identity });
      stopLeading();
    },
    logger,
    kubeLogger,
  });
  const lease =
    options.leaderElection === false
      ? new UnelectedLease(options.kubeConfig, namespace, leaseName)
      : campaign.heldLease;
  const generations = new GenerationSource(
    options.epochStore ??
      new LeaseEpochStore({ lease, kubeConfig: options.kubeConfig, namespace, legacyName: `${leaseName}-generation` }),
  );

  const driver = createWarmPoolDriver({
    kubeConfig: options.kubeConfig,
    namespace,
    agentPodSelector: options.agentPodSelector,
    setter,
    statusWriter: options.statusWriter,
    events,
    generations,
    token,
    metrics,
    leadership: campaign.leadership,
    settings: options.driver,
    logger,
    kubeLogger,
    clock,
  });
  const { reconciler, pools, templates, inventories, addresses } = driver;

  const federationSettings = options.federation ?? {};
  const { federation, multiCluster } = createFederation(federationSettings, {
    promRegistry: metrics.registry,
    logger: logger.child({ subsystem: 'federation' }),
  });
  const envs = createSandboxEnvs({
    kubeConfig: options.kubeConfig,
    pools,
    templates,
    inventories,
    federation,
    multiCluster,
    writer: options.envStatusWriter,
    scaleTarget: options.scaleTarget,
    scaleDownDelayMs: options.envScaleDownDelayMs,
    staleAfterMs: reconciler.settings.staleAfterMs,
    intervalMs: Math.min(federation.intervalMs, reconciler.settings.intervalMs),
    logger,
    kubeLogger,
    clock,
  });

  const claimsOptions = options.claims;
  const poolAutoscaler =
    claimsOptions === undefined
      ? undefined
      : new PoolAutoscaler({
          kubeConfig: options.kubeConfig,
          pools,
          templates,
          inventories,
          redis: claimsOptions.redis,
          prefix: claimsOptions.prefix ?? 'warmpool',
          registry: metrics.registry,
          staleAfterMs: reconciler.settings.staleAfterMs,
          settings: options.poolAutoscaler,
          scaleTarget: options.scaleTarget,
          clock,
          logger,
          kubeLogger,
        });
  const claims =
    claimsOptions === undefined
      ? undefined
      : createProvisioning({
          // The pipeline takes only a URL until it is wired to redis/connection.ts: a password file travels in it,
          // a CA file or Sentinel makes the start fail with that reason (rather than every claim failing).
          redis: claimsOptions.redis,
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
          ...(poolAutoscaler !== undefined ? { onServed: poolAutoscaler.served } : {}),
          clock,
          logger: logger.child({ subsystem: 'provisioning' }),
        });
  const claimApi =
    claims === undefined
      ? undefined
      : createServedClaimApi({
          kubeConfig: options.kubeConfig,
          claims,
          envs: envs.informer.lister,
          localRecords: () => envs.reconciler.records,
          federation,
          multiCluster,
          peers: federationSettings.peers,
          reviewer: claimsOptions?.reviewer,
          // Read when a claim comes in: the SandboxClaim cache is made below.
          sandboxClaimNamed: (namespace, name) => sandboxClaims?.informer.lister.get(namespace, name) !== undefined,
          logger,
        });
  let claimsServer: HttpServer | undefined;
  // The SandboxClaim controller and the claim janitor, over whichever pipeline there is.
  const claimService: ClaimService | undefined = options.claimService ?? claims;
  const sandboxClaims =
    claimService === undefined || claims === undefined
      ? undefined
      : new SandboxClaims({
          kubeConfig: options.kubeConfig,
          claims: claimService,
          repair: { index: claims.index, recordOf: (agent, row) => claims.directory.recordOf(agent, row) },
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
  const sandboxApi =
    options.sandboxApi === undefined
      ? undefined
      : createSandboxApi({
          ...options.sandboxApi,
          transport: transportFor(options.kubeConfig),
          inventories,
          pools,
          templates,
          ...(claims !== undefined && claimsOptions !== undefined && sandboxClaims !== undefined
            ? {
                claims: {
                  pipeline: claims,
                  redis: claimsOptions.redis,
                  eventsKey: claims.claimEventsKey,
                  sandboxClaims: sandboxClaims.informer,
                },
              }
            : {}),
          token,
          addresses,
          registry: metrics.registry,
          logger: logger.child({ subsystem: 'sandbox-api' }),
        });

  // Every cache this replica keeps, in every replica (a new leader starts on warm caches).
  const informers: ReadonlyArray<Informer<KubeObject>> = [
    pools,
    templates,
    inventories,
    envs.informer,
    ...driver.driverOnly,
    ...(sandboxClaims !== undefined ? [sandboxClaims.informer] : []),
    ...(poolAutoscaler !== undefined ? [poolAutoscaler.informer] : []),
  ] as Array<Informer<KubeObject>>;

  let server: HttpServer | undefined;
  let probeServer: HttpServer | undefined;
  let started: Promise<void> | undefined;
  let closing: Promise<void> | undefined;
  let leading = false;

  const health = replicaHealth({
    token,
    informers,
    driver: reconciler,
    clock,
    stallTimeoutMs: options.stallTimeoutMs ?? 120_000,
  });
  const { notReadyReasons, notLiveReasons } = health;
  const describe = (): Record<string, unknown> => ({
    identity,
    leader: leading && reconciler.driving,
    leaseHolder: campaign.leaseHolder,
  });
  const claimsNotReadyReasons = claims !== undefined ? { claimsNotReadyReasons: () => claims.notReadyReasons() } : {};
  const app = createHealthApp({ metrics, notReadyReasons, notLiveReasons, describe, ...claimsNotReadyReasons });
  const probeApp = createHealthApp({ notReadyReasons, notLiveReasons, describe });

  // Every replica, from start() to close(): the caches, the SandboxEnv runs (each Env's local capacity for its
  // claim router), the federation watcher, the claim pipeline (its BullMQ batch workers included), the claim API
  // and the Sandbox API; start() below.
  // Leader-only, for one term (drive() to stopLeading()): the warm-pool driver, the SandboxClaim controller and
  // claim janitor, SandboxEnv status writes and the autoscaler, the pool autoscaler, and the federation reporter.
  const drive = async (signal: AbortSignal): Promise<void> => {
    leading = true;
    metrics.leading(true);
    logger.info('leading: driving the node agents', { identity });
    // The driver does not wait for the SandboxClaim cache; the SandboxClaim controller waits for it itself.
    void sandboxClaims?.lead(signal);
    try {
      await Promise.all(
        informers
          .filter((informer) => informer !== sandboxClaims?.informer)
          .map((informer) => informer.waitForSync(signal)),
      );
    } catch {
      return; // leadership ended before the caches filled
    }
    reconciler.startDriving(signal);
    envs.reconciler.startLeading();
    poolAutoscaler?.controller.startLeading(signal);
    federation.startReporting();
  };

  const stopLeading = (): void => {
    leading = false;
    metrics.leading(false);
    reconciler.stopDriving();
    void sandboxClaims?.stopLeading();
    envs.reconciler.stopLeading();
    poolAutoscaler?.controller.stopLeading();
    void federation.stopReporting();
  };

  const start = async (): Promise<void> => {
    if (options.listen !== undefined)
      server = await serveApp(app, { host: options.listen.host, port: options.listen.port });
    if (options.probeListen !== undefined)
      probeServer = await serveApp(probeApp, { host: options.probeListen.host, port: options.probeListen.port });
    for (const informer of informers) informer.start();
    // The Env runs read the caches: the first waits for them, later ones see them filled.
    void Promise.all(informers.map((informer) => informer.waitForSync())).then(
      () => envs.reconciler.start(),
      () => undefined,
    );
    if (multiCluster) await federation.start();
    else
      logger.info(
        'single cluster: federation is off (it needs both --cluster-id and --federation-redis-url); nothing is reported or watched',
      );
    if (claims !== undefined && claimApi !== undefined) {
      await claims.start();
      const listen = claimsOptions?.listen;
      if (listen !== undefined)
        claimsServer = await serveApp(claimApi, {
          host: listen.host,
          port: listen.port,
          ...(claimsOptions?.tls !== undefined ? { tls: claimsOptions.tls } : {}),
        });
    }
    await sandboxApi?.start();
    campaign.start();
    logger.info('control plane started', {
      identity,
      namespace,
      lease: leaseName,
      url: server?.url ?? null,
      claimsUrl: claimsServer?.url ?? null,
      sandboxApiUrl: sandboxApi?.url ?? null,
      ...reconciler.settings,
    });
  };

  /** Every step runs even when one before it throws; the failures are logged. */
  const close = async (): Promise<void> => {
    campaign.stopFollowingToken();
    const steps: Array<[string, () => Promise<unknown>]> = [
      // Stop pushing first, then hand the lease over so a standby takes over at once.
      ['leadership', () => campaign.resign()],
      ['reconciler', () => reconciler.close()],
      ['sandbox claims', async () => sandboxClaims?.stopLeading()],
      ['sandboxenvs', () => envs.reconciler.close()],
      ['pool autoscaler', async () => poolAutoscaler?.close()],
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
    envs: envs.reconciler,
    autoscaler: envs.autoscaler,
    poolAutoscaler,
    federation,
    sandboxApi,
    notReadyReasons,
    ready: () => notReadyReasons().length === 0,
    isLeader: () => leading && reconciler.driving,
    start: () => (started ??= start()),
    close: () => (closing ??= (started ?? Promise.resolve()).catch(() => undefined).then(close)),
  };
}
