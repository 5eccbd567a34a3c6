// The control plane's internals, for its specs: one entry so that src/index.ts
// stays the small public surface (the composition root and its config).
export { createControlPlane, defaultIdentity, COMPONENT, DEFAULT_LEASE_NAME, type ControlPlane, type ControlPlaneOptions } from '../../src/control-plane.js';
export { FLAGS, SUMMARY, TOKEN_ENV, validateConfig, type ControlPlaneConfig, type ValidatedConfig } from '../../src/config.js';
export { ControlPlaneMetrics, NODE_STATES, POOL_STATES, type NodeStateLabel, type PoolState } from '../../src/metrics.js';
export { kubeTime } from '../../src/clock.js';
export { rotatingToken, staticToken, type TokenSource } from '../../src/token.js';
export { HttpPoolSetter, type HttpPoolSetterOptions } from '../../src/agents/http-pool-setter.js';
export { AgentCallError, NoTokenError, NotLeadingError, StaleGenerationError, type AgentNode, type CallOptions, type PoolSetter } from '../../src/agents/pool-setter.js';
export {
  COUNTER_BITS, EPOCH_SPAN, MAX_EPOCH, epochOf, generationOf, GenerationExhaustedError, GenerationSource, majorityApplied, MemoryEpochStore, type EpochStore,
} from '../../src/generation/generation.js';
export { EPOCH_ANNOTATION, epochIn, LeaseEpochStore, UnelectedLease, type HeldLease, type LeaseEpochStoreOptions } from '../../src/generation/lease-epoch-store.js';
export { WarmPoolReconciler, type Leadership, type WarmPoolReconcilerOptions } from '../../src/controllers/warmpool/reconciler.js';
export { CoalescingTrigger, type CoalescingTriggerOptions } from '../../src/controllers/warmpool/trigger.js';
export { DRIVER_DEFAULTS, type WarmPoolDriverSettings } from '../../src/controllers/warmpool/options.js';
export { planPools, demandsOf, type PoolPlan, type KeyDemand, type TemplateLookup } from '../../src/controllers/warmpool/plan.js';
export { desiredSetOf, reportedSig, type DesiredSet } from '../../src/controllers/warmpool/desired.js';
export { NodeTracker, observationOf, type NodeView, type Exclusion, type Observation, type NodeTrackerOptions } from '../../src/controllers/warmpool/nodes.js';
export { addressCheckOf, slimNode, type AddressCheck, type NodeAddressSources } from '../../src/controllers/warmpool/node-addresses.js';
export { fitStatus, statusFieldsOf, type StatusFields } from '../../src/controllers/warmpool/status-schema.js';
export { READY, REASONS, selectorOf, statusesOf, statusSig, transitionEvents, withTransitionTimes, type PoolStatusPlan, type StatusInputs, type PoolEvent } from '../../src/controllers/warmpool/status.js';
export { FIELD_MANAGER, KubePoolStatusWriter, type PoolStatusWriter } from '../../src/controllers/warmpool/status-writer.js';
export { discardEvents, KubeEventRecorder, type EventRecorder, type EventType, type KubeEventRecorderOptions } from '../../src/controllers/warmpool/events.js';
export { createHealthApp, type HealthAppOptions } from '../../src/http/health.js';
