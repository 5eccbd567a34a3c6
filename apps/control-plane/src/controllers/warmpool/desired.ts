// A node's desired warm-target set, in the one canonical order, with a
// signature for cheap comparison: equal sets, equal signatures.
import { poolKeyId, type InventoryPool, type PoolTarget } from '@warmpool/api';
import type { KeyDemand } from './plan.js';

export interface DesiredSet {
  /** Sorted by pool key id; only targets > 0 (a key left out drains on the node). */
  pools: PoolTarget[];
  sig: string;
}

export function desiredSetOf(held: ReadonlyMap<string, number> | undefined, demands: ReadonlyMap<string, KeyDemand>): DesiredSet {
  const pools: PoolTarget[] = [];
  for (const [keyId, warm] of held ?? []) {
    const demand = demands.get(keyId);
    if (demand === undefined || warm <= 0) continue;
    pools.push({ template: demand.key.template, net: demand.key.net, size: demand.key.size, warm });
  }
  pools.sort((a, b) => compare(poolKeyId(a), poolKeyId(b)));
  return { pools, sig: targetSig(pools.map((p) => [poolKeyId(p), p.warm])) };
}

/** The signature of what a node reports as its targets (target > 0 only). */
export function reportedSig(pools: readonly InventoryPool[]): string {
  const entries: Array<[string, number]> = [];
  for (const pool of pools) if (pool.target > 0) entries.push([poolKeyId(pool), pool.target]);
  entries.sort((a, b) => compare(a[0], b[0]));
  return targetSig(entries);
}

function targetSig(entries: ReadonlyArray<readonly [string, number]>): string {
  return entries.map(([id, n]) => `${id}=${n}`).join(';');
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
