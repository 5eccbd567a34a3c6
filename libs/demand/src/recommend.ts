// The replicas a pool needs for a hit-ratio target, as a base-stock level.
// Each claim takes one warm sandbox and the node starts its replacement at
// once (replicas counts warm + booting, never claimed), so the refills owed
// at any moment are the claims of the last lead time: Poisson(λ·L) for
// Poisson arrivals (M/G/∞). A claim is served warm when fewer than
// `replicas` refills are owed as it arrives, so the share served warm is
// P(N ≤ replicas − 1) and the smallest replicas meeting the target is
// quantile(λ·L, target) + 1. What is claimed is therefore already counted:
// it is the refills in flight the quantile covers.
import { poissonQuantile } from './poisson.js';

export interface ReplicaBounds {
  minReplicas: number;
  maxReplicas: number;
}

export type Limit = 'min' | 'max' | undefined;

/** The unclamped base-stock level: 0 without demand. */
export function baseStock(ratePerSecond: number, leadTimeSeconds: number, targetHitRatio: number): number {
  const mean = Math.max(0, ratePerSecond) * Math.max(0, leadTimeSeconds);
  if (mean === 0) return 0;
  return poissonQuantile(mean, targetHitRatio) + 1;
}

/** Clamps to the bounds and says which one bound it. */
export function clampReplicas(replicas: number, bounds: ReplicaBounds): { replicas: number; limit: Limit } {
  if (replicas < bounds.minReplicas) return { replicas: bounds.minReplicas, limit: 'min' };
  if (replicas > bounds.maxReplicas) return { replicas: bounds.maxReplicas, limit: 'max' };
  return { replicas, limit: undefined };
}
