export { isDriven, poolKeyOf, TemplateKeyError } from './pool-key.js';
export type { PoolDemand, Spread, SpreadNode, Targets } from './targets.js';
export { spread } from './spread.js';
export { minimumTargetsMoved, targetsMoved } from './churn.js';
export { nodeRoom } from './node-room.js';
export { replicasOf } from './replicas.js';
export { observePools, type NodePoolsReport, type PoolObservation } from './observe.js';
export { waterFill } from './water-fill.js';
