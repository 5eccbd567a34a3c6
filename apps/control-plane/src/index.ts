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
