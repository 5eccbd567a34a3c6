// How much a new spread disturbs the nodes, and the least any spread could.
//
// "Targets moved" counts, per pool, max(units added, units removed) over all
// nodes: a unit that leaves node A for node B counts once (one sandbox
// discarded, one created), growth or shrink by k counts k, and a departed
// node's units count as removed there. So +1 replica moves 1, and losing a
// node that held k units moves k when they all land elsewhere.
import type { Targets } from './targets.js';

interface PoolChurn {
  added: number;
  removed: number;
}

function churnOf(table: Map<string, PoolChurn>, pool: string): PoolChurn {
  let churn = table.get(pool);
  if (churn === undefined) {
    churn = { added: 0, removed: 0 };
    table.set(pool, churn);
  }
  return churn;
}

/** Σ over pools of max(units added, units removed) between two target sets. */
export function targetsMoved(before: Targets, after: Targets): number {
  const table = new Map<string, PoolChurn>();
  for (const [node, held] of before) {
    const now = after.get(node);
    for (const [pool, was] of held) {
      const is = now?.get(pool) ?? 0;
      if (is > was) churnOf(table, pool).added += is - was;
      else if (is < was) churnOf(table, pool).removed += was - is;
    }
  }
  for (const [node, held] of after) {
    const then = before.get(node);
    for (const [pool, is] of held) {
      if (then?.has(pool) === true) continue;
      if (is > 0) churnOf(table, pool).added += is;
    }
  }
  let moved = 0;
  for (const { added, removed } of table.values()) moved += Math.max(added, removed);
  return moved;
}

/**
 * A lower bound on targetsMoved(before, after) for any spread that places
 * what `after` places: a node present in `before` but not in `after` has
 * departed and its units must be re-created elsewhere; a node present only in
 * `after` has joined and whatever `after` puts there must be created. Room
 * that shrank on a node that stayed is not counted, so there the bound is loose.
 */
export function minimumTargetsMoved(before: Targets, after: Targets): number {
  interface Totals {
    before: number;
    after: number;
    lost: number;
    gained: number;
  }
  const table = new Map<string, Totals>();
  const totals = (pool: string): Totals => {
    let t = table.get(pool);
    if (t === undefined) {
      t = { before: 0, after: 0, lost: 0, gained: 0 };
      table.set(pool, t);
    }
    return t;
  };
  for (const [node, held] of before) {
    const departed = !after.has(node);
    for (const [pool, units] of held) {
      const t = totals(pool);
      t.before += units;
      if (departed) t.lost += units;
    }
  }
  for (const [node, held] of after) {
    const joined = !before.has(node);
    for (const [pool, units] of held) {
      const t = totals(pool);
      t.after += units;
      if (joined) t.gained += units;
    }
  }
  let minimum = 0;
  for (const t of table.values()) {
    // added ≥ gained and added = removed + growth; removed ≥ lost.
    const growth = t.after - t.before;
    minimum += Math.max(t.gained, t.lost, t.lost + growth, t.gained - growth);
  }
  return minimum;
}
