// The control plane's internals, for its specs: one entry so that src/index.ts
// stays the small public surface (the composition root and its config).
export { createControlPlane, COMPONENT } from '../../src/control-plane.js';
export type { ControlPlane, ControlPlaneOptions } from '../../src/options.js';
export { DEFAULT_LEASE_NAME, defaultIdentity } from '../../src/config/settings.js';
export { FLAGS, SUMMARY, type ControlPlaneConfig } from '../../src/config/flags.js';
export { validateConfig, type ValidatedConfig } from '../../src/config/validate.js';
export {
  WarmPoolMetrics,
  NODE_STATES,
  POOL_STATES,
  type NodeStateLabel,
  type PoolState,
} from '../../src/controllers/warmpool/metrics.js';
export { kubeTime } from '../../src/clock.js';
export { rotatingToken, staticToken, type TokenSource } from '../../src/token.js';
export { AgentClient, type AgentClientOptions, type ClaimAnswer } from '../../src/agents/client.js';
export { AgentCallError, NoTokenError, NotLeadingError, StaleGenerationError } from '../../src/agents/errors.js';
export type { AgentNode, CallOptions, PoolSetter } from '../../src/agents/pool-setter.js';
export {
  COUNTER_BITS,
  EPOCH_SPAN,
  MAX_EPOCH,
  epochOf,
  generationOf,
  GenerationExhaustedError,
  GenerationSource,
  majorityApplied,
  MemoryEpochStore,
  type EpochStore,
} from '../../src/generation/generation.js';
export {
  EPOCH_ANNOTATION,
  epochIn,
  LeaseEpochStore,
  UnelectedLease,
  type HeldLease,
  type LeaseEpochStoreOptions,
} from '../../src/generation/lease-epoch-store.js';
export {
  WarmPoolReconciler,
  type Leadership,
  type WarmPoolReconcilerOptions,
} from '../../src/controllers/warmpool/reconciler.js';
export { DRIVER_DEFAULTS, type WarmPoolDriverSettings } from '../../src/controllers/warmpool/options.js';
export {
  planPools,
  demandsOf,
  type PoolPlan,
  type KeyDemand,
  type TemplateLookup,
} from '../../src/controllers/warmpool/plan.js';
export { desiredSetOf, type DesiredSet } from '../../src/controllers/warmpool/desired.js';
export {
  NodeTracker,
  observationOf,
  reportedSig,
  type NodeView,
  type Exclusion,
  type Observation,
  type NodeTrackerOptions,
} from '../../src/nodes/tracker.js';
export { addressCheckOf, slimNode, type AddressCheck, type NodeAddressSources } from '../../src/nodes/addresses.js';
export { fitStatus, statusFieldsOf, type StatusFields } from '../../src/controllers/warmpool/status-schema.js';
export { StatusLane, type StatusBatch } from '../../src/controllers/warmpool/status-queue.js';
export {
  READY,
  REASONS,
  selectorOf,
  statusesOf,
  statusSig,
  transitionEvents,
  withTransitionTimes,
  type PoolStatusPlan,
  type StatusInputs,
  type PoolEvent,
} from '../../src/controllers/warmpool/status.js';
export {
  FIELD_MANAGER,
  KubePoolStatusWriter,
  type PoolStatusWriter,
} from '../../src/controllers/warmpool/status-writer.js';
export {
  discardEvents,
  KubeEventRecorder,
  type EventRecorder,
  type EventType,
  type KubeEventRecorderOptions,
} from '../../src/controllers/warmpool/events.js';
export { createHealthApp, registerBuildInfo, type HealthAppOptions } from '../../src/http/health.js';
export { SandboxClaims, type SandboxClaimsOptions } from '../../src/controllers/sandboxclaims/sandboxclaims.js';
export {
  SandboxClaimController,
  SANDBOX_CLAIM_DEFAULTS,
  type SandboxClaimSettings,
  type SandboxClaimControllerOptions,
} from '../../src/controllers/sandboxclaims/controller.js';
export {
  ClaimJanitor,
  JANITOR_DEFAULTS,
  type ClaimRepair,
  type ClaimJanitorSettings,
  type ClaimJanitorOptions,
  type NodeClaims,
  type SweepResult,
} from '../../src/controllers/sandboxclaims/janitor.js';
export {
  addressedToWarmpool,
  hasFinalizer,
  ownershipOf,
  type ClaimCaches,
  type ClaimOwnership,
} from '../../src/controllers/sandboxclaims/ownership.js';
export {
  CLAIMED,
  claimedStatus,
  failedStatus,
  ipOf,
  isReadyClaimed,
  isRetryable,
  readyOf,
  statusDiffers,
  type ClaimStatusPatch,
  type ReadyReason,
} from '../../src/controllers/sandboxclaims/status.js';
export { isExpired, renewalAt, shutdownAt, ttlSecondsFor } from '../../src/controllers/sandboxclaims/lifetime.js';
export {
  CLAIM_LABEL,
  isClaimSecret,
  SANDBOX_SECRET_TYPE,
  sandboxSecret,
  secretMatches,
  type KubeSecret,
} from '../../src/controllers/sandboxclaims/secret.js';
export type { AgentAddress } from '../../src/nodes/addresses.js';
export { SandboxClaimMetrics } from '../../src/controllers/sandboxclaims/metrics.js';
export {
  Federation,
  FEDERATION_DEFAULTS,
  type FederationOptions,
  type HubSettings,
} from '../../src/federation/federation.js';
export { FederationKeys, DEFAULT_FEDERATION_PREFIX } from '../../src/federation/keys.js';
export { FederationReporter, type ReporterOptions } from '../../src/federation/reporter.js';
export { FederationWatcher, type WatcherOptions } from '../../src/federation/watcher.js';
export { EnvClaimRouter, type EnvClaimOrder, type EnvGrant } from '../../src/federation/router.js';
export {
  SandboxEnvReconciler,
  type SandboxEnvReconcilerOptions,
} from '../../src/controllers/sandboxenvs/reconciler.js';
export {
  EnvAutoscaler,
  AUTOSCALER_DEFAULTS,
  nextTotal,
  distribute,
} from '../../src/controllers/sandboxenvs/autoscaler.js';
export {
  SandboxView,
  type SandboxChange,
  type NodeReport,
  type SandboxViewOptions,
} from '../../src/aggregated/view.js';
export { SandboxReader, type SandboxReaderOptions } from '../../src/aggregated/reader.js';
export { sandboxObject, ServedSandbox, type SandboxFacts } from '../../src/aggregated/sandbox-object.js';
export { createSandboxApi, type SandboxApi, type SandboxApiOptions } from '../../src/aggregated/sandbox-api.js';
export {
  bullConnection,
  connect as connectRedis,
  describeRedis,
  parseRedisUrl,
  readSecretFile,
  redactedUrl,
  redisOptions,
  type RedisSettings,
} from '../../src/redis/connection.js';
