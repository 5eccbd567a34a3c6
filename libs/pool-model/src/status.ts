// A SandboxWarmPool's status from what the nodes report: one pass over the
// NodeInventories, never a look at a sandbox.
import { poolKeyId, type Condition, type InventoryPool } from '@warmpool/api';

export interface PoolObservation {
  /** Σ of the targets the nodes applied: what `.status.replicas` (the scale subresource) reports. */
  replicas: number;
  /**
   * Σ over nodes of min(warm, target). Warm sandboxes above a node's target
   * (left by a scale-down, about to be trimmed) do not count, so Ready never
   * exceeds replicas and `kubectl get swp` showing Ready = Desired means every
   * placed target is met, not that the surplus of one node hides the deficit of another.
   */
  readyReplicas: number;
  /** Σ warm, surplus included: what a claim could find right now. */
  warm: number;
  refilling: number;
  /** Nodes that report a target or warm sandboxes of this pool. */
  nodes: number;
}

/** What one node reports about its pools: a NodeInventory's status, or an agent's latest answer in that shape. */
export interface NodeReport {
  readonly pools?: readonly InventoryPool[];
}

/**
 * Pool id (poolKeyId) → what the given nodes report about it. Pass only the
 * reports that count (fresh, not draining): the caller decides.
 */
export function observePools(reports: Iterable<NodeReport | undefined>): Map<string, PoolObservation> {
  const observed = new Map<string, PoolObservation>();
  for (const report of reports) {
    for (const pool of report?.pools ?? []) {
      const target = Math.max(0, pool.target);
      const warm = Math.max(0, pool.warm);
      if (target === 0 && warm === 0 && pool.refilling <= 0) continue;
      const id = poolKeyId(pool);
      let row = observed.get(id);
      if (row === undefined) {
        row = { replicas: 0, readyReplicas: 0, warm: 0, refilling: 0, nodes: 0 };
        observed.set(id, row);
      }
      row.replicas += target;
      row.readyReplicas += Math.min(warm, target);
      row.warm += warm;
      row.refilling += Math.max(0, pool.refilling);
      row.nodes += 1;
    }
  }
  return observed;
}

export const DEGRADED = 'Degraded';

/**
 * The Degraded condition of a pool, from the spread's unplaced count. Without
 * lastTransitionTime: the caller keeps it across updates whose status did not change.
 */
export function degradedCondition(input: {
  desired: number;
  unplaced: number;
  eligibleNodes?: number;
  observedGeneration?: number;
}): Condition {
  const { desired, unplaced, eligibleNodes, observedGeneration } = input;
  const generation = observedGeneration === undefined ? {} : { observedGeneration };
  if (unplaced <= 0) {
    return {
      type: DEGRADED,
      status: 'False',
      reason: 'AllPlaced',
      message: `all ${desired} replicas are placed on nodes`,
      ...generation,
    };
  }
  if (eligibleNodes === 0) {
    return {
      type: DEGRADED,
      status: 'True',
      reason: 'NoEligibleNodes',
      message: `${unplaced} of ${desired} replicas are not placed: no node is eligible (all draining, stale or absent)`,
      ...generation,
    };
  }
  return {
    type: DEGRADED,
    status: 'True',
    reason: 'InsufficientRoom',
    message: `${unplaced} of ${desired} replicas are not placed: every eligible node is out of room`,
    ...generation,
  };
}
