export { ClaimWindow } from './claim-window.js';
export {
  BURST_SIGNIFICANCE,
  DemandScaler,
  checkDemandSettings,
  type DemandDecision,
  type DemandObservation,
  type DemandReason,
  type DemandSettings,
} from './demand-scaler.js';
export { LEAD_TIME_DEFAULTS, LeadTimeEstimator, type LeadTimeSettings } from './lead-time.js';
export { normalQuantile, poissonCdf, poissonQuantile } from './poisson.js';
export { baseStock, clampReplicas, type Limit, type ReplicaBounds } from './recommend.js';
export { ScaleDownStabilizer } from './stabilizer.js';
