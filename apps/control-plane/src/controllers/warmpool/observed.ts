// What the counting nodes report about each pool, summed, kept between runs:
// a run adds and takes out only the nodes whose view changed (a new answer or
// inventory, in or out of placement). Invariant: after update(views) the map
// equals observePools over the observations of the eligible views (every field
// is a sum, and a row exists while at least one node contributes to it);
// observed.properties in incremental.properties.test.ts checks it.
import { poolKeyId, type InventoryPool } from '@warmpool/api';
import type { PoolObservation } from '@warmpool/pool-model';
import type { NodeView, Observation } from '../../nodes/tracker.js';

export class ObservedPools {
  /** node → the observation it counts with (eligible views only). */
  readonly #counted = new Map<string, Observation>();
  readonly #rows = new Map<string, PoolObservation>();

  /** Brings the sums in line with `views`; returns them (live: read before the next update). */
  update(views: readonly NodeView[]): ReadonlyMap<string, PoolObservation> {
    const seen = new Set<string>();
    for (const view of views) {
      const counts = view.eligible ? view.observation : undefined;
      if (counts === undefined) continue;
      seen.add(view.name);
      const before = this.#counted.get(view.name);
      if (before === counts) continue;
      if (before !== undefined) this.#apply(before.pools, -1);
      this.#apply(counts.pools, 1);
      this.#counted.set(view.name, counts);
    }
    for (const [name, before] of this.#counted) {
      if (seen.has(name)) continue;
      this.#apply(before.pools, -1);
      this.#counted.delete(name);
    }
    return this.#rows;
  }

  /** observePools' per-node contribution, added (sign 1) or taken out (-1) in place. */
  #apply(pools: readonly InventoryPool[], sign: 1 | -1): void {
    for (const pool of pools) {
      const target = Math.max(0, pool.target);
      const warm = Math.max(0, pool.warm);
      if (target === 0 && warm === 0 && pool.refilling <= 0) continue;
      const id = poolKeyId(pool);
      let row = this.#rows.get(id);
      if (row === undefined) {
        row = { replicas: 0, readyReplicas: 0, warm: 0, refilling: 0, nodes: 0 };
        this.#rows.set(id, row);
      }
      row.replicas += sign * target;
      row.readyReplicas += sign * Math.min(warm, target);
      row.warm += sign * warm;
      row.refilling += sign * Math.max(0, pool.refilling);
      row.nodes += sign;
      if (row.nodes === 0) this.#rows.delete(id);
    }
  }
}
