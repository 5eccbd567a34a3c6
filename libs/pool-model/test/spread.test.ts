import { describe, expect, it } from 'vitest';
import { spread, type SpreadNode } from '../src/index.js';
import { nodeLoad, plain, poolTotal } from './support.js';

const nodes = (count: number, room = Infinity): SpreadNode[] =>
  Array.from({ length: count }, (_, i) => ({ name: `node-${i}`, room }));

describe('spread', () => {
  describe('placement', () => {
    it('deals a pool evenly: every node gets floor(replicas / nodes) or one more', () => {
      const { targets, placed } = spread([{ id: 'python', replicas: 7 }], nodes(3));
      const counts = [...targets.values()].map((held) => held.get('python'));
      expect(counts.sort()).toEqual([2, 2, 3]);
      expect(placed.get('python')).toBe(7);
    });

    it('puts a pool with fewer replicas than nodes on distinct nodes', () => {
      const { targets } = spread([{ id: 'python', replicas: 4 }], nodes(10));
      const holders = [...targets.values()].filter((held) => held.has('python'));
      expect(holders).toHaveLength(4);
      expect(holders.every((held) => held.get('python') === 1)).toBe(true);
    });

    it('lists every eligible node, keeps only non-zero targets, and leaves ineligible nodes out', () => {
      const { targets, placed } = spread(
        [
          { id: 'python', replicas: 1 },
          { id: 'idle', replicas: 0 },
        ],
        [
          { name: 'a', room: 5 },
          { name: 'b', room: 5 },
          { name: 'drained', room: 5, eligible: false },
        ],
      );
      expect([...targets.keys()]).toEqual(['a', 'b']);
      expect(poolTotal(targets, 'python')).toBe(1);
      expect([...targets.values()].some((held) => held.has('idle'))).toBe(false);
      expect(placed.get('idle')).toBe(0);
    });

    it('ranks nodes the same way whether a pool picks a few or hundreds of them', () => {
      const fleet = nodes(400);
      const holders = (replicas: number): Set<string> =>
        new Set(
          [...spread([{ id: 'python', replicas }], fleet).targets]
            .filter(([, held]) => held.has('python'))
            .map(([node]) => node),
        );
      const few = holders(100);
      const many = holders(300);
      expect(few.size).toBe(100);
      expect(many.size).toBe(300);
      for (const node of few) expect(many.has(node)).toBe(true);
      expect(holders(500).size).toBe(400);
    });

    it("lists nodes in name order and each node's pools in id order", () => {
      const { targets } = spread(
        [
          { id: 'b', replicas: 6 },
          { id: 'a', replicas: 6 },
          { id: 'c', replicas: 6 },
        ],
        [
          { name: 'n2', room: 10 },
          { name: 'n1', room: 10 },
        ],
      );
      expect([...targets.keys()]).toEqual(['n1', 'n2']);
      for (const held of targets.values()) expect([...held.keys()]).toEqual(['a', 'b', 'c']);
    });
  });

  describe('room', () => {
    it('never gives a node more than its room and overflows to nodes with room', () => {
      const { targets, unplaced } = spread(
        [{ id: 'python', replicas: 6 }],
        [
          { name: 'small', room: 1 },
          { name: 'big', room: 10 },
        ],
      );
      expect(plain(targets)).toEqual({ big: { python: 5 }, small: { python: 1 } });
      expect(unplaced.size).toBe(0);
    });

    it('reports the replicas that find no room anywhere', () => {
      const { targets, placed, unplaced } = spread(
        [{ id: 'python', replicas: 8 }],
        [
          { name: 'a', room: 2 },
          { name: 'b', room: 3 },
        ],
      );
      expect(nodeLoad(targets, 'a')).toBe(2);
      expect(nodeLoad(targets, 'b')).toBe(3);
      expect(placed.get('python')).toBe(5);
      expect(unplaced.get('python')).toBe(3);
    });

    it('shares scarce room fairly: a small pool is not crowded out by a big one', () => {
      const { placed, unplaced } = spread(
        [
          { id: 'big', replicas: 10 },
          { id: 'small', replicas: 2 },
        ],
        [
          { name: 'a', room: 2 },
          { name: 'b', room: 2 },
        ],
      );
      expect(placed.get('small')).toBe(2);
      expect(placed.get('big')).toBe(2);
      expect(unplaced.get('big')).toBe(8);
      expect(unplaced.has('small')).toBe(false);
    });

    it('treats negative room as none and unknown (infinite) room as unbounded', () => {
      const { targets } = spread(
        [{ id: 'python', replicas: 50 }],
        [
          { name: 'over-claimed', room: -3 },
          { name: 'unknown', room: Infinity },
        ],
      );
      expect(plain(targets)).toEqual({ 'over-claimed': {}, unknown: { python: 50 } });
    });

    it('places nothing when no node is eligible', () => {
      const result = spread([{ id: 'python', replicas: 3 }], [{ name: 'a', room: 9, eligible: false }]);
      expect(result.targets.size).toBe(0);
      expect(result.unplaced.get('python')).toBe(3);
      expect(spread([{ id: 'python', replicas: 3 }], []).unplaced.get('python')).toBe(3);
    });
  });

  describe('previous targets', () => {
    it('keeps a placement that still fits, even where the fresh spread would differ', () => {
      const pools = [
        { id: 'p', replicas: 1 },
        { id: 'q', replicas: 1 },
      ];
      const twoSlots = [
        { name: 'a', room: 1 },
        { name: 'b', room: 1 },
      ];
      for (const previous of [
        { a: 'p', b: 'q' },
        { a: 'q', b: 'p' },
      ]) {
        const held = new Map(Object.entries(previous).map(([node, pool]) => [node, new Map([[pool, 1]])]));
        expect(plain(spread(pools, twoSlots, held).targets)).toEqual({
          a: { [previous.a]: 1 },
          b: { [previous.b]: 1 },
        });
      }
    });

    it('goes back to the even spread when room no longer forces otherwise', () => {
      const pools = [{ id: 'python', replicas: 6 }];
      const lopsided = new Map([['node-0', new Map([['python', 6]])]]);
      expect(plain(spread(pools, nodes(3), lopsided).targets)).toEqual(plain(spread(pools, nodes(3)).targets));
    });

    it('ignores previous targets of unknown nodes and pools', () => {
      const previous = new Map([
        ['gone', new Map([['python', 3]])],
        ['node-0', new Map([['deleted', 2]])],
      ]);
      expect(plain(spread([{ id: 'python', replicas: 3 }], nodes(3), previous).targets)).toEqual(
        plain(spread([{ id: 'python', replicas: 3 }], nodes(3)).targets),
      );
    });
  });

  describe('bad input', () => {
    it('rejects a pool listed twice', () => {
      expect(() =>
        spread(
          [
            { id: 'p', replicas: 1 },
            { id: 'p', replicas: 2 },
          ],
          nodes(1),
        ),
      ).toThrow(/pool "p" is listed twice/);
    });

    it('rejects replicas that are negative or not integers', () => {
      expect(() => spread([{ id: 'p', replicas: -1 }], nodes(1))).toThrow(/pool "p" wants -1 replicas/);
      expect(() => spread([{ id: 'p', replicas: 1.5 }], nodes(1))).toThrow(/non-negative integer/);
    });

    it('rejects a node listed twice, an unnamed node, and NaN room', () => {
      expect(() =>
        spread(
          [],
          [
            { name: 'a', room: 1 },
            { name: 'a', room: 2, eligible: false },
          ],
        ),
      ).toThrow(/node "a" is listed twice/);
      expect(() => spread([], [{ name: '', room: 1 }])).toThrow(/non-empty name/);
      expect(() => spread([], [{ name: 'a', room: Number.NaN }])).toThrow(/room NaN/);
    });
  });
});
