// What the nodes report about each pool, summed: the counts a SandboxWarmPool's
// status is made of. One pass over the nodes' reports, never a look at a
// sandbox. The conditions and Events built on these counts live with the
// driver (control-plane controllers/warmpool/status.ts).
import { poolKeyId, type InventoryPool } from '@warmpool/api';

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
export interface NodePoolsReport {
  readonly pools?: readonly InventoryPool[];
}

/**
 * Pool id (poolKeyId) → what the given nodes report about it. Pass only the
 * reports that count (fresh, not draining): the caller decides.
 */
export function observePools(reports: Iterable<NodePoolsReport | undefined>): Map<string, PoolObservation> {
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
