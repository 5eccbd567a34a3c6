export { Capacity, UNBOUNDED_HEADROOM, canGrow, schedulable, headroomRank } from './capacity.js';
export { compareForeignCandidates, compareIdentity } from './ranking.js';
export {
  CapacityRegistry,
  type CapacityObservation,
  type CapacityRecord,
  type ForeignChoice,
  type MonotonicClock,
  type CapacityRegistryOptions,
} from './registry.js';
export { formatPinnedTarget, parsePinnedTarget, type PinnedTarget } from './pinned-target.js';
export { FederationGauges, FEDERATION_METRIC_NAMES, publishMetrics } from './metrics.js';
export { toForeignClusterMember } from './cluster-status.js';
