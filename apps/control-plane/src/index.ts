// The control plane's public surface: the composition root and its config.
// Specs reach the internals through test/support/internals.ts.
export { createControlPlane, defaultIdentity, COMPONENT, DEFAULT_LEASE_NAME, type ControlPlane, type ControlPlaneOptions } from './control-plane.js';
export { FLAGS, SUMMARY, TOKEN_ENV, validateConfig, type ControlPlaneConfig, type ValidatedConfig } from './config.js';

// Re-export kept for branches in flight; tests import from test/support/internals.ts
export { ControlPlaneMetrics, NODE_STATES, POOL_STATES, type NodeState, type NodeStateLabel, type PoolState } from './metrics.js';
export { systemClock, kubeTime, type Clock } from './clock.js';
export { rotatingToken, staticToken, type TokenSource } from './token.js';
export { HttpPoolSetter, type HttpPoolSetterOptions } from './agents/http-pool-setter.js';
export { AgentCallError, NoTokenError, NotLeadingError, StaleGenerationError, type AgentNode, type CallOptions, type PoolSetter } from './agents/pool-setter.js';
export {
  COUNTER_BITS, EPOCH_SPAN, MAX_EPOCH, epochOf, generationOf, GenerationExhaustedError, GenerationSource, majorityApplied, MemoryEpochStore, type EpochStore,
} from './generation/generation.js';
export { EPOCH_ANNOTATION, epochIn, LeaseEpochStore, UnelectedLease, type HeldLease, type LeaseEpochStoreOptions } from './generation/lease-epoch-store.js';
export { WarmPoolReconciler, type Leadership, type WarmPoolReconcilerOptions } from './controllers/warmpool/reconciler.js';
export { CoalescingTrigger, type CoalescingTriggerOptions } from './controllers/warmpool/trigger.js';
export { DRIVER_DEFAULTS, type WarmPoolDriverSettings } from './controllers/warmpool/options.js';
export { planPools, demandsOf, type PoolPlan, type KeyDemand, type TemplateLookup } from './controllers/warmpool/plan.js';
export { desiredSetOf, reportedSig, type DesiredSet } from './controllers/warmpool/desired.js';
export { NodeTracker, observationOf, type NodeView, type Exclusion, type Observation, type NodeTrackerOptions } from './controllers/warmpool/nodes.js';
export { addressCheckOf, slimNode, type AddressCheck, type NodeAddressSources } from './controllers/warmpool/node-addresses.js';
export { fitStatus, statusFieldsOf, type StatusFields } from './controllers/warmpool/status-schema.js';
export { READY, REASONS, selectorOf, statusesOf, statusSig, transitionEvents, withTransitionTimes, type PoolStatusPlan, type StatusInputs, type PoolEvent } from './controllers/warmpool/status.js';
export { FIELD_MANAGER, KubePoolStatusWriter, type PoolStatusWriter } from './controllers/warmpool/status-writer.js';
export { discardEvents, KubeEventRecorder, type EventRecorder, type EventType, type KubeEventRecorderOptions } from './controllers/warmpool/events.js';
export { createHealthApp, type HealthAppOptions } from './http/health.js';
export { SandboxClaims, type SandboxClaimsOptions } from './controllers/sandboxclaims/sandboxclaims.js';
export { SandboxClaimController, SANDBOX_CLAIM_DEFAULTS, type SandboxClaimSettings, type SandboxClaimControllerOptions } from './controllers/sandboxclaims/controller.js';
export { ClaimJanitor, JANITOR_DEFAULTS, parseClaimRef, type ClaimJanitorSettings, type ClaimJanitorOptions, type SweepResult } from './controllers/sandboxclaims/janitor.js';
export { addressedToWarmpool, hasFinalizer, ownershipOf, type ClaimCaches, type ClaimOwnership } from './controllers/sandboxclaims/ownership.js';
export { CLAIMED, claimedStatus, failedStatus, ipOf, isReadyClaimed, isRetryable, readyOf, statusDiffers, type ClaimStatusPatch, type ReadyReason } from './controllers/sandboxclaims/status.js';
export { isExpired, renewalAt, shutdownAt, ttlSecondsFor } from './controllers/sandboxclaims/lifetime.js';
export { CLAIM_LABEL, isClaimSecret, SANDBOX_SECRET_TYPE, sandboxSecret, secretMatches, type KubeSecret } from './controllers/sandboxclaims/secret.js';
export { KeyedQueue, type KeyedQueueOptions, type WorkOutcome } from './controllers/sandboxclaims/queue.js';
export { HttpNodeClaims, type AgentAddress, type NodeClaims } from './controllers/sandboxclaims/node-claims.js';
export { SandboxClaimMetrics } from './controllers/sandboxclaims/metrics.js';
export { Federation, FEDERATION_DEFAULTS, type FederationOptions, type HubSettings } from './federation/federation.js';
export { FederationKeys, DEFAULT_FEDERATION_PREFIX } from './federation/keys.js';
export { FederationReporter, type ReporterOptions } from './federation/reporter.js';
export { FederationWatcher, type WatcherOptions } from './federation/watcher.js';
export { EnvClaimRouter, type EnvClaimOrder, type EnvGrant } from './federation/router.js';
export { SandboxEnvReconciler, type SandboxEnvReconcilerOptions } from './controllers/sandboxenvs/reconciler.js';
export { EnvAutoscaler, AUTOSCALER_DEFAULTS, nextTotal, distribute } from './controllers/sandboxenvs/autoscaler.js';
export { SandboxView, type SandboxChange, type NodeReport, type SandboxViewOptions } from './aggregated/view.js';
export { SandboxReader, type SandboxReaderOptions } from './aggregated/reader.js';
export { sandboxObject, ServedSandbox, type SandboxFacts } from './aggregated/sandbox-object.js';
export { createSandboxApi, type SandboxApi, type SandboxApiOptions } from './aggregated/sandbox-api.js';
