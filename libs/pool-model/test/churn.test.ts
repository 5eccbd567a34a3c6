import { describe, expect, it } from 'vitest';
import { minimumTargetsMoved, targetsMoved, type Targets } from '../src/index.js';

const targets = (table: Record<string, Record<string, number>>): Targets =>
  new Map(Object.entries(table).map(([node, held]) => [node, new Map(Object.entries(held))]));

describe('targetsMoved', () => {
  it('is zero for identical targets', () => {
    const t = targets({ a: { p: 2 }, b: { p: 1, q: 3 } });
    expect(targetsMoved(t, t)).toBe(0);
  });

  it('counts growth and shrink unit by unit', () => {
    expect(targetsMoved(targets({ a: { p: 1 } }), targets({ a: { p: 2 }, b: { p: 1 } }))).toBe(2);
    expect(targetsMoved(targets({ a: { p: 3 } }), targets({ a: { p: 1 } }))).toBe(2);
  });

  it('counts a unit relocated from one node to another once', () => {
    expect(targetsMoved(targets({ a: { p: 2 }, b: {} }), targets({ a: { p: 1 }, b: { p: 1 } }))).toBe(1);
  });

  it("counts a departed node's units once they land elsewhere", () => {
    const before = targets({ a: { p: 2, q: 1 }, b: { p: 1 }, c: {} });
    const after = targets({ b: { p: 2 }, c: { p: 1, q: 1 } });
    expect(targetsMoved(before, after)).toBe(3);
  });

  it("counts pools separately: one pool's loss is not another's gain", () => {
    expect(targetsMoved(targets({ a: { p: 1 } }), targets({ a: { q: 1 } }))).toBe(2);
  });
});

describe('minimumTargetsMoved', () => {
  it('is the replica change when the node set stays', () => {
    expect(minimumTargetsMoved(targets({ a: { p: 1 }, b: {} }), targets({ a: { p: 1 }, b: { p: 1 } }))).toBe(1);
    expect(minimumTargetsMoved(targets({ a: { p: 2 } }), targets({ a: { p: 1 } }))).toBe(1);
  });

  it("is the departed node's units when a node leaves", () => {
    const before = targets({ a: { p: 2, q: 1 }, b: { p: 1 } });
    expect(minimumTargetsMoved(before, targets({ b: { p: 3, q: 1 } }))).toBe(3);
  });

  it('is what lands on a joined node when a node joins', () => {
    expect(minimumTargetsMoved(targets({ a: { p: 2 } }), targets({ a: { p: 1 }, b: { p: 1 } }))).toBe(1);
  });

  it('never exceeds targetsMoved', () => {
    const before = targets({ a: { p: 2, q: 1 }, b: { p: 1 } });
    const after = targets({ b: { q: 2 }, c: { p: 4 } });
    expect(minimumTargetsMoved(before, after)).toBeLessThanOrEqual(targetsMoved(before, after));
  });
});
