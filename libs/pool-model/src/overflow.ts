// Step 3 of the spread: what admission turned away, dealt over the room left.
import { addAt } from './add-at.js';
import type { OffIdeal } from './admission.js';
import { affinity, rankKey } from './hashing.js';
import type { Ideal } from './ideal.js';
import type { Nodes, Pools } from './prepare.js';
import { waterFill } from './water-fill.js';

export interface Overflow {
  readonly pool: number[];
  readonly node: number[];
  readonly count: number[];
  readonly unplaced: Float64Array;
}

/** Deals what admission turned away over the room left: max-min fair between pools, even within one. */
export function placeOverflow(
  pools: Pools,
  nodes: Nodes,
  ideal: Ideal,
  off: OffIdeal,
  offByPool: Map<number, number[]>,
  granted: Float64Array,
  offGranted: Float64Array,
  lacking: Float64Array,
): Overflow {
  const n = nodes.names.length;
  const overflow: Overflow = { pool: [], node: [], count: [], unplaced: new Float64Array(pools.ids.length) };
  const needy: number[] = [];
  for (let p = 0; p < pools.ids.length; p++) if ((lacking[p] as number) > 0) needy.push(p);
  if (needy.length === 0) return overflow;

  const free = Float64Array.from(nodes.room);
  for (let e = 0; e < ideal.node.length; e++) addAt(free, ideal.node[e] as number, -(granted[e] as number));
  for (let o = 0; o < off.node.length; o++) addAt(free, off.node[o] as number, -(offGranted[o] as number));
  let totalFree = 0;
  for (const f of free) totalFree += f;

  const wants = Float64Array.from(needy, (p) => lacking[p] as number);
  const keys = Float64Array.from(needy, (p) => rankKey(pools.hash[p] as number, p));
  const grants = waterFill(new Float64Array(needy.length), wants, keys, totalFree);

  const held = new Float64Array(n);
  for (let i = 0; i < needy.length; i++) {
    const p = needy[i] as number;
    const grant = grants[i] as number;
    overflow.unplaced[p] = (wants[i] as number) - grant;
    if (grant <= 0) continue;
    const touched: number[] = [];
    for (let e = ideal.start[p] as number; e < (ideal.start[p + 1] as number); e++) {
      addAt(held, ideal.node[e] as number, granted[e] as number);
      touched.push(ideal.node[e] as number);
    }
    for (const o of offByPool.get(p) ?? []) {
      addAt(held, off.node[o] as number, offGranted[o] as number);
      touched.push(off.node[o] as number);
    }
    const candidates: number[] = [];
    for (let j = 0; j < n; j++) if ((free[j] as number) > 0) candidates.push(j);
    const base = Float64Array.from(candidates, (j) => held[j] as number);
    const cap = Float64Array.from(candidates, (j) => free[j] as number);
    const key = Float64Array.from(candidates, (j) =>
      rankKey(affinity(pools.hash[p] as number, nodes.salt[j] as number), j),
    );
    const added = waterFill(base, cap, key, grant);
    for (let c = 0; c < candidates.length; c++) {
      const units = added[c] as number;
      if (units <= 0) continue;
      const node = candidates[c] as number;
      addAt(free, node, -units);
      overflow.pool.push(p);
      overflow.node.push(node);
      overflow.count.push(units);
    }
    for (const node of touched) held[node] = 0;
  }
  return overflow;
}
