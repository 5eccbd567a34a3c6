// The subsystems the composition root lists, each built here from the
// settings and what the others hold: the warm-pool driver with its agent
// client, events and generations; the claim side (the claim pipeline, the
// claim API in front of it, the SandboxClaim controller and janitor over it);
// the Sandbox API that serves what the nodes and the pipeline know. Optional
// ones are undefined when their settings are absent; nothing starts here.
import { transportFor, type KubeLogger, type KubeConfig } from '@warmpool/kube';
import type { Clock, Logger } from '@warmpool/runtime';
import type { SandboxApiSettings, ClaimsSettings } from './config/settings.js';
import { SandboxClaims } from './controllers/sandboxclaims/sandboxclaims.js';
import { createSandboxEnvs, type SandboxEnvs } from './controllers/sandboxenvs/sandboxenvs.js';
import { createWarmPoolDriver, type WarmPoolDriver } from './controllers/warmpool/driver.js';
import { KubeEventRecorder, type EventRecorder } from './controllers/warmpool/events.js';
import { GenerationSource } from './generation/generation.js';
import { LeaseEpochStore, UnelectedLease } from './generation/lease-epoch-store.js';
import type { Manager } from './manager/manager.js';
import { AgentClient } from './agents/client.js';
import type { PoolSetter } from './agents/pool-setter.js';
import type { FederationSetup } from './federation/setup.js';
import { ClaimApiServer, createReplicaClaimApi } from './http/claims/server.js';
import type { WarmPoolMetrics } from './controllers/warmpool/metrics.js';
import { createSandboxApi, type SandboxApi } from './sandbox-api/sandbox-api.js';
import type { ControlPlaneOptions } from './options.js';
import type { ClaimOrder, ServedGrant } from './provisioning/claim-service.js';
import { createProvisioning, type ProvisioningPipeline } from './provisioning/pipeline.js';
import type { TokenSource } from './agents/token.js';

export interface Shared {
  kubeConfig: KubeConfig;
  /** Who writes Events (core/v1 source.component). */
  component: string;
  token: TokenSource;
  metrics: WarmPoolMetrics;
  logger: Logger;
  kubeLogger: KubeLogger;
  clock: Clock;
}

export interface DriverSide extends WarmPoolDriver {
  setter: PoolSetter;
  events: EventRecorder;
}

export interface DriverSideInputs {
  identity: string;
  /** The election Lease, where the generation epoch is kept. */
  namespace: string;
  leaseName: string;
  /** false: no election, the epoch is written to an unelected Lease. */
  elect: boolean;
  manager: Manager;
}

export function createDriverSide(
  shared: Shared,
  options: Pick<
    ControlPlaneOptions,
    'poolSetter' | 'setPools' | 'events' | 'epochStore' | 'statusWriter' | 'agentPodSelector' | 'driver'
  >,
  inputs: DriverSideInputs,
): DriverSide {
  const { kubeConfig, token, logger, clock } = shared;
  const { namespace, leaseName, manager } = inputs;
  const lease = inputs.elect ? manager.heldLease : new UnelectedLease(kubeConfig, namespace, leaseName);
  const epochs = new LeaseEpochStore({ lease, kubeConfig, namespace, legacyName: `${leaseName}-generation` });
  const setter = options.poolSetter ?? new AgentClient({ token, ...options.setPools });
  const events =
    options.events ??
    new KubeEventRecorder({ kubeConfig, component: shared.component, instance: inputs.identity, logger, clock });
  const driver = createWarmPoolDriver({
    ...shared,
    namespace,
    agentPodSelector: options.agentPodSelector,
    setter,
    statusWriter: options.statusWriter,
    events,
    generations: new GenerationSource(options.epochStore ?? epochs),
    leadership: manager.leadership,
    settings: options.driver,
  });
  return { ...driver, setter, events };
}

/** The SandboxEnv controller over the driver's caches, reporting to federation. */
export function createEnvSide(
  shared: Shared,
  options: Pick<ControlPlaneOptions, 'envStatusWriter' | 'scaleTarget' | 'envScaleDownDelayMs'>,
  driver: WarmPoolDriver,
  federation: FederationSetup,
): SandboxEnvs {
  const { reconciler } = driver;
  return createSandboxEnvs({
    ...shared,
    pools: driver.pools,
    templates: driver.templates,
    inventories: driver.inventories,
    federation: federation.federation,
    multiCluster: federation.multiCluster,
    writer: options.envStatusWriter,
    scaleTarget: options.scaleTarget,
    scaleDownDelayMs: options.envScaleDownDelayMs,
    staleAfterMs: reconciler.settings.staleAfterMs,
    intervalMs: Math.min(federation.federation.intervalMs, reconciler.settings.intervalMs),
  });
}

export interface ClaimSide {
  settings: ClaimsSettings;
  pipeline: ProvisioningPipeline;
  api: ClaimApiServer;
  app: ReturnType<typeof createReplicaClaimApi>;
  sandboxClaims: SandboxClaims;
}

/** What the claim side reads that the warm-pool driver and the SandboxEnv controller hold. */
export interface ClaimSideInputs {
  identity: string;
  driver: WarmPoolDriver;
  envs: SandboxEnvs;
  federation: FederationSetup;
  /** Told of every served claim (the pool autoscaler's claim counts). */
  onServed?: ((order: ClaimOrder, grant: ServedGrant) => void) | undefined;
}

/** Undefined when provisioning is off (no `claims` settings). */
export function createClaimSide(
  shared: Shared,
  options: Pick<ControlPlaneOptions, 'claims' | 'federation' | 'sandboxClaims'>,
  inputs: ClaimSideInputs,
): ClaimSide | undefined {
  const { kubeConfig, token, metrics, logger, clock } = shared;
  const settings = options.claims;
  if (settings === undefined) return undefined;
  const { driver } = inputs;
  const { reconciler, pools, templates, inventories, addresses } = driver;
  const pipeline = createProvisioning({
    redis: settings.redis,
    replica: inputs.identity,
    ...(settings.prefix !== undefined ? { prefix: settings.prefix } : {}),
    ...settings.settings,
    pools,
    templates,
    inventories,
    driverViews: () => (reconciler.driving ? reconciler.nodes() : []),
    addresses,
    staleAfterMs: reconciler.settings.staleAfterMs,
    token,
    registry: metrics.registry,
    ...(inputs.onServed !== undefined ? { onServed: inputs.onServed } : {}),
    clock,
    logger: logger.child({ subsystem: 'provisioning' }),
  });
  const sandboxClaims = new SandboxClaims({
    kubeConfig,
    claims: pipeline,
    repair: { index: pipeline.index, recordOf: (agent, row) => pipeline.directory.recordOf(agent, row) },
    pools,
    templates,
    inventories,
    addresses,
    token,
    registry: metrics.registry,
    logger,
    kubeLogger: shared.kubeLogger,
    clock,
    ...options.sandboxClaims,
  });
  const app = createReplicaClaimApi({
    kubeConfig,
    claims: pipeline,
    envs: inputs.envs.informer.lister,
    localRecords: () => inputs.envs.reconciler.records,
    federation: inputs.federation.federation,
    multiCluster: inputs.federation.multiCluster,
    peers: options.federation?.peers,
    sandboxClaimNamed: (namespace, name) => sandboxClaims.informer.lister.get(namespace, name) !== undefined,
    logger,
  });
  return { settings, pipeline, app, api: new ClaimApiServer(app, settings.listen, settings.tls), sandboxClaims };
}

/** Undefined when the Sandbox API is not served (no `sandboxApi` settings). */
export function createSandboxApiOf(
  shared: Shared,
  settings: SandboxApiSettings | undefined,
  driver: WarmPoolDriver,
  claims: ClaimSide | undefined,
): SandboxApi | undefined {
  if (settings === undefined) return undefined;
  return createSandboxApi({
    ...settings,
    transport: transportFor(shared.kubeConfig),
    inventories: driver.inventories,
    pools: driver.pools,
    templates: driver.templates,
    ...(claims !== undefined
      ? {
          claims: {
            pipeline: claims.pipeline,
            redis: claims.settings.redis,
            eventsKey: claims.pipeline.claimEventsKey,
            sandboxClaims: claims.sandboxClaims.informer,
          },
        }
      : {}),
    token: shared.token,
    addresses: driver.addresses,
    registry: shared.metrics.registry,
    logger: shared.logger.child({ subsystem: 'sandbox-api' }),
  });
}
