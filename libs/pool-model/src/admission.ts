// Step 2 of the spread: fitting the ideal into each node's room, keeping
// what the previous targets held where room is contested.
import { addAt } from './add-at.js';
import { affinity, rankKey } from './hashing.js';
import { findEntry, type Ideal } from './ideal.js';
import type { Nodes, Pools } from './prepare.js';
import type { Targets } from './targets.js';
import { waterFill } from './water-fill.js';

/** Units a pool held last time on a node where the ideal wants fewer (or none). */
export interface OffIdeal {
  readonly pool: number[];
  readonly node: number[];
  readonly count: number[];
}

/**
 * Compares the previous targets with the ideal: per ideal entry, how many
 * units were already there (sticky); and the units held off the ideal.
 */
export function recallPrevious(
  previous: Targets | undefined,
  pools: Pools,
  nodes: Nodes,
  ideal: Ideal,
): { sticky: Float64Array; off: OffIdeal } {
  const sticky = new Float64Array(ideal.count.length);
  const off: OffIdeal = { pool: [], node: [], count: [] };
  if (previous === undefined) return { sticky, off };
  for (const [nodeName, held] of previous) {
    const n = nodes.index.get(nodeName);
    if (n === undefined) continue;
    for (const [poolId, raw] of held) {
      const p = pools.index.get(poolId);
      if (p === undefined || pools.replicas[p] === 0) continue;
      const count = Number.isFinite(raw) ? Math.floor(raw) : 0;
      if (count <= 0) continue;
      const e = findEntry(ideal, p, n);
      const kept = e < 0 ? 0 : Math.min(ideal.count[e] as number, count);
      if (e >= 0) sticky[e] = kept;
      if (count > kept) {
        off.pool.push(p);
        off.node.push(n);
        off.count.push(count - kept);
      }
    }
  }
  return { sticky, off };
}

export function groupByPool(pool: readonly number[]): Map<number, number[]> {
  const groups = new Map<number, number[]>();
  for (let i = 0; i < pool.length; i++) {
    const p = pool[i] as number;
    const group = groups.get(p);
    if (group === undefined) groups.set(p, [i]);
    else group.push(i);
  }
  return groups;
}

function sum(values: Float64Array): number {
  let total = 0;
  for (const v of values) total += v;
  return total;
}

interface Row {
  readonly pool: number;
  entry: number;
  off: number;
}

/** A node whose demand exceeded its room, with one row per pool that wants it. */
export interface Contested {
  readonly node: number;
  readonly rows: Row[];
  readonly key: Float64Array;
}

export interface Admission {
  /** Units admitted per ideal entry. */
  readonly granted: Float64Array;
  /** Units admitted per off-ideal holding. */
  readonly offGranted: Float64Array;
  readonly contested: Contested[];
}

/**
 * How many units each ideal entry and each off-ideal holding keeps, where
 * nodes are short of room (see the header). Uncontested nodes keep all.
 */
export function admit(pools: Pools, nodes: Nodes, ideal: Ideal, sticky: Float64Array, off: OffIdeal): Admission {
  const n = nodes.names.length;
  const granted = Float64Array.from(ideal.count);
  const offGranted = Float64Array.from(off.count);
  const load = new Float64Array(n);
  for (let e = 0; e < ideal.node.length; e++) addAt(load, ideal.node[e] as number, ideal.count[e] as number);
  for (let o = 0; o < off.node.length; o++) addAt(load, off.node[o] as number, off.count[o] as number);

  const rowsOf = new Map<number, Map<number, Row>>();
  for (let i = 0; i < n; i++) if ((load[i] as number) > (nodes.room[i] as number)) rowsOf.set(i, new Map());
  if (rowsOf.size === 0) return { granted, offGranted, contested: [] };

  for (let p = 0; p < pools.ids.length; p++) {
    for (let e = ideal.start[p] as number; e < (ideal.start[p + 1] as number); e++) {
      rowsOf.get(ideal.node[e] as number)?.set(p, { pool: p, entry: e, off: -1 });
    }
  }
  for (let o = 0; o < off.node.length; o++) {
    const rows = rowsOf.get(off.node[o] as number);
    if (rows === undefined) continue;
    const p = off.pool[o] as number;
    const row = rows.get(p);
    if (row === undefined) rows.set(p, { pool: p, entry: -1, off: o });
    else row.off = o;
  }

  const contested: Contested[] = [];
  for (const [node, byPool] of rowsOf) {
    const rows = [...byPool.values()];
    const m = rows.length;
    const salt = nodes.salt[node] as number;
    const key = Float64Array.from(rows, (row) => rankKey(affinity(pools.hash[row.pool] as number, salt), row.pool));
    contested.push({ node, rows, key });
    const keepIdeal = new Float64Array(m);
    const keepOff = new Float64Array(m);
    const fresh = new Float64Array(m);
    for (let j = 0; j < m; j++) {
      const row = rows[j] as Row;
      if (row.entry >= 0) {
        keepIdeal[j] = sticky[row.entry] as number;
        fresh[j] = (ideal.count[row.entry] as number) - (keepIdeal[j] as number);
      }
      if (row.off >= 0) keepOff[j] = off.count[row.off] as number;
    }
    let left = nodes.room[node] as number;
    const g1 = waterFill(new Float64Array(m), keepIdeal, key, left);
    left -= sum(g1);
    const g2 = waterFill(g1, keepOff, key, left);
    left -= sum(g2);
    const level = g1.map((g, j) => g + (g2[j] as number));
    const g3 = waterFill(level, fresh, key, left);
    for (let j = 0; j < m; j++) {
      const row = rows[j] as Row;
      if (row.entry >= 0) granted[row.entry] = (g1[j] as number) + (g3[j] as number);
      if (row.off >= 0) offGranted[row.off] = g2[j] as number;
    }
  }
  return { granted, offGranted, contested };
}

/**
 * Dropping surplus frees room on contested nodes that turned ideal units
 * away; those units come back first, before anything overflows. Returns
 * whether any did, which may leave their pools with a new surplus to drop.
 */
export function readmit(nodes: Nodes, ideal: Ideal, admission: Admission): boolean {
  const { granted, offGranted } = admission;
  let changed = false;
  for (const { node, rows, key } of admission.contested) {
    const m = rows.length;
    const level = new Float64Array(m);
    const turnedAway = new Float64Array(m);
    let used = 0;
    for (let j = 0; j < m; j++) {
      const row = rows[j] as Row;
      if (row.entry >= 0) {
        level[j] = granted[row.entry] as number;
        turnedAway[j] = (ideal.count[row.entry] as number) - (granted[row.entry] as number);
      }
      if (row.off >= 0) addAt(level, j, offGranted[row.off] as number);
      used += level[j] as number;
    }
    const free = (nodes.room[node] as number) - used;
    if (free <= 0 || sum(turnedAway) === 0) continue;
    const back = waterFill(level, turnedAway, key, free);
    for (let j = 0; j < m; j++) {
      const units = back[j] as number;
      if (units <= 0) continue;
      addAt(granted, (rows[j] as Row).entry, units);
      changed = true;
    }
  }
  return changed;
}

/**
 * A pool that kept off-ideal units and also got its ideal ones admitted has
 * more than it asked for: it lets go of off-ideal units, where it holds the
 * most and likes the node least first. Returns what each pool still lacks.
 */
export function dropSurplus(
  pools: Pools,
  nodes: Nodes,
  ideal: Ideal,
  off: OffIdeal,
  offByPool: Map<number, number[]>,
  granted: Float64Array,
  offGranted: Float64Array,
): Float64Array {
  const lacking = new Float64Array(pools.ids.length);
  for (let p = 0; p < pools.ids.length; p++) {
    let admitted = 0;
    for (let e = ideal.start[p] as number; e < (ideal.start[p + 1] as number); e++) admitted += granted[e] as number;
    const held = offByPool.get(p) ?? [];
    for (const o of held) admitted += offGranted[o] as number;
    const replicas = pools.replicas[p] as number;
    if (admitted <= replicas) {
      lacking[p] = replicas - admitted;
      continue;
    }
    const m = held.length;
    const base = new Float64Array(m);
    const cap = new Float64Array(m);
    const key = new Float64Array(m);
    for (let j = 0; j < m; j++) {
      const o = held[j] as number;
      const node = off.node[o] as number;
      const e = findEntry(ideal, p, node);
      // Negated so that water-filling removes from the fullest, least-liked nodes.
      base[j] = -((offGranted[o] as number) + (e >= 0 ? (granted[e] as number) : 0));
      cap[j] = offGranted[o] as number;
      key[j] = -rankKey(affinity(pools.hash[p] as number, nodes.salt[node] as number), node);
    }
    const removed = waterFill(base, cap, key, admitted - replicas);
    for (let j = 0; j < m; j++) addAt(offGranted, held[j] as number, -(removed[j] as number));
  }
  return lacking;
}
