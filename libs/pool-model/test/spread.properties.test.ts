import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  minimumTargetsMoved,
  spread,
  targetsMoved,
  type PoolDemand,
  type SpreadNode,
  type Targets,
} from '../src/index.js';
import { anyNodesArb, nodeLoad, plain, poolsArb, poolTotal, roomyNodesArb, unitsOn } from './support.js';

const RUNS = { numRuns: 300 };

function withReplicas(pools: PoolDemand[], index: number, delta: number): PoolDemand[] {
  return pools.map((pool, i) => (i === index ? { ...pool, replicas: pool.replicas + delta } : pool));
}

/** A settled state: the spread of some input, given its own previous output. */
function settle(pools: PoolDemand[], nodes: SpreadNode[]): Targets {
  return spread(pools, nodes, spread(pools, nodes).targets).targets;
}

describe('spread (properties)', () => {
  it('honours room, places only on eligible nodes, and accounts for every replica', () => {
    fc.assert(
      fc.property(poolsArb(), anyNodesArb, (pools, nodes) => {
        const { targets, placed, unplaced } = spread(pools, nodes);
        const eligible = nodes.filter((n) => n.eligible !== false);
        expect([...targets.keys()].sort()).toEqual(eligible.map((n) => n.name).sort());
        for (const node of eligible) expect(nodeLoad(targets, node.name)).toBeLessThanOrEqual(Math.max(0, node.room));
        for (const held of targets.values())
          for (const units of held.values()) expect(Number.isInteger(units) && units > 0).toBe(true);
        for (const pool of pools) {
          expect(poolTotal(targets, pool.id)).toBe(placed.get(pool.id));
          expect((placed.get(pool.id) ?? 0) + (unplaced.get(pool.id) ?? 0)).toBe(pool.replicas);
        }
      }),
      RUNS,
    );
  });

  it('leaves replicas unplaced only when every eligible node is full', () => {
    fc.assert(
      fc.property(poolsArb(), anyNodesArb, (pools, nodes) => {
        const { targets, unplaced } = spread(pools, nodes);
        if (unplaced.size === 0) return;
        for (const node of nodes.filter((n) => n.eligible !== false))
          expect(nodeLoad(targets, node.name)).toBe(node.room);
      }),
      RUNS,
    );
  });

  it('is deterministic whatever the order of pools, nodes and previous targets', () => {
    fc.assert(
      fc.property(poolsArb(), anyNodesArb, poolsArb(), fc.context(), (pools, nodes, earlier, ctx) => {
        const previous = spread(earlier, nodes).targets;
        const reversedPrevious: Targets = new Map(
          [...previous].reverse().map(([node, held]) => [node, new Map([...held].reverse())]),
        );
        const a = spread(pools, nodes, previous);
        const b = spread([...pools].reverse(), [...nodes].reverse(), reversedPrevious);
        ctx.log(JSON.stringify(plain(a.targets)));
        expect(plain(b.targets)).toEqual(plain(a.targets));
        expect([...b.targets.keys()]).toEqual([...a.targets.keys()]);
        expect(new Map(b.unplaced)).toEqual(new Map(a.unplaced));
      }),
      RUNS,
    );
  });

  it('changes nothing when given its own output as the previous targets', () => {
    fc.assert(
      fc.property(poolsArb(), anyNodesArb, poolsArb(), anyNodesArb, (pools, nodes, earlierPools, earlierNodes) => {
        const first = spread(pools, nodes, spread(earlierPools, earlierNodes).targets);
        const again = spread(pools, nodes, first.targets);
        expect(plain(again.targets)).toEqual(plain(first.targets));
      }),
      RUNS,
    );
  });

  describe('when room allows', () => {
    it('spreads each pool evenly: its targets on any two eligible nodes differ by at most one', () => {
      fc.assert(
        fc.property(poolsArb(200), roomyNodesArb(), (pools, nodes) => {
          const { targets } = spread(pools, nodes);
          for (const pool of pools) {
            const counts = nodes.map((n) => targets.get(n.name)?.get(pool.id) ?? 0);
            expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
          }
        }),
        RUNS,
      );
    });

    it('does not depend on the previous targets', () => {
      fc.assert(
        fc.property(poolsArb(), roomyNodesArb(), poolsArb(), (pools, nodes, earlier) => {
          const previous = spread(earlier, nodes).targets;
          expect(plain(spread(pools, nodes, previous).targets)).toEqual(plain(spread(pools, nodes).targets));
        }),
        RUNS,
      );
    });

    it('moves exactly one unit when one pool gains or loses one replica', () => {
      fc.assert(
        fc.property(poolsArb(), roomyNodesArb(), fc.nat(), fc.boolean(), (pools, nodes, pick, grow) => {
          const index = pick % pools.length;
          if (!grow && (pools[index] as PoolDemand).replicas === 0) return;
          const before = spread(pools, nodes).targets;
          const after = spread(withReplicas(pools, index, grow ? 1 : -1), nodes, before).targets;
          expect(targetsMoved(before, after)).toBe(1);
          expect(minimumTargetsMoved(before, after)).toBe(1);
        }),
        RUNS,
      );
    });

    it('moves only the units of a node that leaves, and no other node loses any', () => {
      fc.assert(
        fc.property(poolsArb(), roomyNodesArb(2), fc.nat(), (pools, nodes, pick) => {
          const leaving = (nodes[pick % nodes.length] as SpreadNode).name;
          const before = spread(pools, nodes).targets;
          const after = spread(
            pools,
            nodes.filter((n) => n.name !== leaving),
            before,
          ).targets;
          expect(targetsMoved(before, after)).toBe(unitsOn(before, leaving));
          expect(targetsMoved(before, after)).toBe(minimumTargetsMoved(before, after));
          for (const [node, held] of after)
            for (const [pool, units] of held) expect(units).toBeGreaterThanOrEqual(before.get(node)?.get(pool) ?? 0);
        }),
        RUNS,
      );
    });

    it('moves to a node that joins only what it takes, and takes from no node more than it held', () => {
      fc.assert(
        fc.property(poolsArb(), roomyNodesArb(), (pools, nodes) => {
          const before = spread(pools, nodes).targets;
          const after = spread(pools, [...nodes, { name: 'joined-node', room: Infinity }], before).targets;
          expect(targetsMoved(before, after)).toBe(unitsOn(after, 'joined-node'));
          expect(targetsMoved(before, after)).toBe(minimumTargetsMoved(before, after));
          for (const [node, held] of before)
            for (const [pool, units] of held) expect(after.get(node)?.get(pool) ?? 0).toBeLessThanOrEqual(units);
        }),
        RUNS,
      );
    });
  });

  describe('when room is short, from a settled state', () => {
    it('moves at most the minimum when one pool gains a replica', () => {
      fc.assert(
        fc.property(poolsArb(), anyNodesArb, fc.nat(), (pools, nodes, pick) => {
          const before = settle(pools, nodes);
          const after = spread(withReplicas(pools, pick % pools.length, 1), nodes, before).targets;
          expect(targetsMoved(before, after)).toBe(minimumTargetsMoved(before, after));
          expect(targetsMoved(before, after)).toBeLessThanOrEqual(1);
        }),
        RUNS,
      );
    });

    it('moves only the units of a node that leaves', () => {
      fc.assert(
        fc.property(poolsArb(), anyNodesArb, fc.nat(), (pools, nodes, pick) => {
          if (nodes.length === 0) return;
          const leaving = (nodes[pick % nodes.length] as SpreadNode).name;
          const before = settle(pools, nodes);
          const after = spread(
            pools,
            nodes.filter((n) => n.name !== leaving),
            before,
          ).targets;
          expect(targetsMoved(before, after)).toBe(minimumTargetsMoved(before, after));
          expect(targetsMoved(before, after)).toBeLessThanOrEqual(unitsOn(before, leaving));
        }),
        RUNS,
      );
    });

    it("moves only the units that no longer fit when a node's room shrinks", () => {
      fc.assert(
        fc.property(poolsArb(), anyNodesArb, fc.nat(), fc.integer({ min: 1, max: 10 }), (pools, nodes, pick, cut) => {
          if (nodes.length === 0) return;
          const shrinking = nodes[pick % nodes.length] as SpreadNode;
          const before = settle(pools, nodes);
          const smaller = nodes.map((n) => (n === shrinking ? { ...n, room: Math.max(0, n.room - cut) } : n));
          const after = spread(pools, smaller, before).targets;
          const overflowing = Math.max(0, unitsOn(before, shrinking.name) - Math.max(0, shrinking.room - cut));
          expect(targetsMoved(before, after)).toBe(overflowing);
        }),
        RUNS,
      );
    });
  });
});
