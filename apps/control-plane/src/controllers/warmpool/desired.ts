// A node's desired warm-target set, in the one canonical order, with a
// signature for cheap comparison: equal sets, equal signatures.
//
// Both run once per node per reconcile (1 000 nodes: thousands of times a
// second during a fan-out), so neither builds a key id inside a sort
// comparator: ids are made once per entry, then sorted as plain strings.
import { poolKeyId, type InventoryPool, type PoolTarget } from '@warmpool/api';
import type { KeyDemand } from './plan.js';

export interface DesiredSet {
  /** Sorted by pool key id; only targets > 0 (a key left out drains on the node). */
  pools: PoolTarget[];
  sig: string;
}

/** `held` is keyed by pool key id (the spread's targets for one node). */
export function desiredSetOf(
  held: ReadonlyMap<string, number> | undefined,
  demands: ReadonlyMap<string, KeyDemand>,
): DesiredSet {
  const ids: string[] = [];
  for (const [keyId, warm] of held ?? []) if (warm > 0 && demands.has(keyId)) ids.push(keyId);
  ids.sort();
  const pools: PoolTarget[] = [];
  let sig = '';
  for (const keyId of ids) {
    const { key } = demands.get(keyId) as KeyDemand;
    const warm = held?.get(keyId) as number;
    pools.push({ template: key.template, net: key.net, size: key.size, warm });
    sig += sig === '' ? `${keyId}=${warm}` : `;${keyId}=${warm}`;
  }
  return { pools, sig };
}

/** The signature of what a node reports as its targets (target > 0 only). */
export function reportedSig(pools: readonly InventoryPool[]): string {
  const entries: string[] = [];
  for (const pool of pools) if (pool.target > 0) entries.push(`${poolKeyId(pool)}=${pool.target}`);
  // Sorting the entries themselves is canonical too (equal sets, equal strings); it is only ever
  // compared with other reportedSig()s, never with a desired set's sig.
  entries.sort();
  return entries.join(';');
}
