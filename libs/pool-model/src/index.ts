export { isDriven, poolKeyOf, TemplateKeyError } from './pool-key.js';
export type { PoolDemand, Spread, SpreadNode, Targets } from './targets.js';
export { spread } from './spread.js';
export { minimumTargetsMoved, targetsMoved } from './churn.js';
export { nodeRoom } from './node-room.js';
export { replicasOf } from './replicas.js';
export { DEGRADED, degradedCondition, observePools, type NodeReport, type PoolObservation } from './status.js';
export { waterFill } from './water-fill.js';
