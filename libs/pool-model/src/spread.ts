// spread(pools, nodes, previous?): per-node warm targets for every pool.
//
// 1. Ideal (ideal.ts). Each pool ranks the eligible nodes by rendezvous
//    hashing and deals its replicas round-robin down that ranking: every node
//    gets floor(replicas / nodes), the top (replicas mod nodes) one more. Room
//    is ignored here, so the ideal moves only when replicas or the node set
//    change, and then minimally: +1 replica adds one unit on one node; a node
//    leaving only hands its units to the nodes next in each ranking.
// 2. Admission (admission.ts). Where a node's demand exceeds its room, units
//    are admitted in three classes: ideal units the node already held
//    (sticky), units it held off the ideal (kept while the pool still needs
//    them), then new ideal units. Within a class the lowest per-pool level
//    goes first, affinity breaks the tie. A pool that ends up with more than
//    it asked for drops its off-ideal units, lowest affinity first; the room
//    that frees takes back ideal units it had turned away, and so on until
//    nothing changes. So a spread of its own output changes nothing, and a
//    pool squeezed off its ideal node returns there once room frees.
// 3. Overflow (overflow.ts). Whatever was not admitted is dealt over the
//    nodes that still have room, max-min fair between pools, evenly within a pool.
//
// Nothing depends on input order (pools and nodes are sorted first) and
// nothing is per sandbox: the cost is O(pools × nodes) cheap hashes plus the
// placed (sparse) targets; without contention `previous` changes nothing.
import { admit, dropSurplus, groupByPool, readmit, recallPrevious } from './admission.js';
import { idealTargets } from './ideal.js';
import { placeOverflow } from './overflow.js';
import { preparePools, prepareNodes } from './prepare.js';
import type { PoolDemand, Spread, SpreadNode, Targets } from './targets.js';

/** Rounds of re-admitting ideal units after surplus is dropped (see readmit). */
const MAX_READMIT_ROUNDS = 8;

/**
 * Per-node warm targets for every pool: honours each node's room, spreads each
 * pool evenly over the eligible nodes, and, given the previous result, keeps
 * what it can where room is short. Deterministic whatever the input order.
 */
export function spread(pools: readonly PoolDemand[], nodes: readonly SpreadNode[], previous?: Targets): Spread {
  const poolSet = preparePools(pools);
  const nodeSet = prepareNodes(nodes);
  const ideal = idealTargets(poolSet, nodeSet);
  const { sticky, off } = recallPrevious(previous, poolSet, nodeSet, ideal);
  const offByPool = groupByPool(off.pool);
  const admission = admit(poolSet, nodeSet, ideal, sticky, off);
  const { granted, offGranted } = admission;
  let lacking = dropSurplus(poolSet, nodeSet, ideal, off, offByPool, granted, offGranted);
  // Each round admits at least one more ideal unit; the bound only caps
  // pathological cascades, which then overflow like any turned-away unit.
  for (let round = 0; round < MAX_READMIT_ROUNDS && readmit(nodeSet, ideal, admission); round++) {
    lacking = dropSurplus(poolSet, nodeSet, ideal, off, offByPool, granted, offGranted);
  }
  const overflow = placeOverflow(poolSet, nodeSet, ideal, off, offByPool, granted, offGranted, lacking);

  const targets = new Map<string, Map<string, number>>();
  const perNode = nodeSet.names.map((name) => {
    const held = new Map<string, number>();
    targets.set(name, held);
    return held;
  });
  const add = (node: number, id: string, units: number): void => {
    const held = perNode[node] as Map<string, number>;
    held.set(id, (held.get(id) ?? 0) + units);
  };
  const placed = new Map<string, number>();
  const unplaced = new Map<string, number>();
  let next = 0;
  for (let p = 0; p < poolSet.ids.length; p++) {
    const id = poolSet.ids[p] as string;
    for (let e = ideal.start[p] as number; e < (ideal.start[p + 1] as number); e++) {
      const units = granted[e] as number;
      if (units > 0) (perNode[ideal.node[e] as number] as Map<string, number>).set(id, units);
    }
    for (const o of offByPool.get(p) ?? []) {
      const units = offGranted[o] as number;
      if (units > 0) add(off.node[o] as number, id, units);
    }
    for (; next < overflow.pool.length && overflow.pool[next] === p; next++)
      add(overflow.node[next] as number, id, overflow.count[next] as number);
    const missing = overflow.unplaced[p] as number;
    placed.set(id, (poolSet.replicas[p] as number) - missing);
    if (missing > 0) unplaced.set(id, missing);
  }
  return { targets, placed, unplaced };
}
