import { describe, expect, it } from 'vitest';
import { waterFill } from '../src/index.js';

const fill = (base: number[], cap: number[], key: number[], amount: number): number[] => [
  ...waterFill(Float64Array.from(base), Float64Array.from(cap), Float64Array.from(key), amount),
];

describe('waterFill', () => {
  it('raises the lowest levels first', () => {
    expect(fill([0, 3, 1], [10, 10, 10], [1, 2, 3], 4)).toEqual([2, 0, 2]);
  });

  it('gives the last partial level to the highest keys', () => {
    expect(fill([0, 0, 0], [5, 5, 5], [1, 3, 2], 4)).toEqual([1, 2, 1]);
  });

  it("never exceeds an item's cap and pours at most the total cap", () => {
    expect(fill([0, 0], [1, 2], [1, 2], 10)).toEqual([1, 2]);
    expect(fill([0, 0, 0], [1, Infinity, 0], [1, 2, 3], 5)).toEqual([1, 4, 0]);
  });

  it('pours nothing when there is nothing to pour', () => {
    expect(fill([0, 0], [3, 3], [1, 2], 0)).toEqual([0, 0]);
    expect(fill([], [], [], 7)).toEqual([]);
  });

  it('works with negative levels, which is how the spread drains the fullest items first', () => {
    expect(
      fill(
        [-5, -2, -4],
        [3, 3, 3],
        [0, 0, 0].map((_, i) => -i),
        3,
      ),
    ).toEqual([2, 0, 1]);
  });

  it('does not depend on the order of the items', () => {
    const a = fill([2, 0, 1, 0], [4, 4, 1, 9], [10, 20, 30, 40], 7);
    const b = fill([0, 1, 0, 2], [9, 1, 4, 4], [40, 30, 20, 10], 7);
    expect(b).toEqual([a[3], a[2], a[1], a[0]]);
  });
});
