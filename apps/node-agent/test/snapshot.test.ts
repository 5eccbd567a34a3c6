import type { NodeInfo } from '@warmpool/api';
import { significantChange, snapshotOf, statusOf, urgentChange } from '@warmpool/node-agent';
import { describe, expect, it } from 'vitest';

/** Pools as template → [target, warm], in the order sandboxd lists them. */
type Pools = Record<string, [target: number, warm: number]>;

function info(pools: Pools, extra: Partial<NodeInfo> = {}): NodeInfo {
  return {
    pools: Object.entries(pools).map(([template, [target, warm]]) => ({
      key: { template, net: 'none', size: 'small' },
      target,
      warm,
      refilling: 0,
    })),
    claimed: 0,
    ...extra,
  };
}

/** The snapshot of what sandboxd says, at applied generation 4 unless told. */
const snap = (pools: Pools, extra: Partial<NodeInfo> = {}, generation = 4): ReturnType<typeof snapshotOf> =>
  snapshotOf(info(pools, extra), generation);

const base = snap({ a: [3, 3], b: [2, 1] });

describe('inventory significance', () => {
  it('publishes the first snapshot', () => {
    expect(significantChange(undefined, base)).toBe('first publish');
  });

  it('ignores what claims move all the time: warm above 0, refilling and claimed', () => {
    const busy = snap({ a: [3, 1], b: [2, 2] }, { claimed: 40 });
    busy.pools[0]!.refilling = 2;
    expect(significantChange(base, busy)).toBeUndefined();
  });

  it('publishes when a pool runs out of warm sandboxes, and when it has some again', () => {
    const empty = snap({ a: [3, 0], b: [2, 1] });
    expect(significantChange(base, empty)).toBe('a|none|small ran out of warm sandboxes');
    expect(significantChange(empty, base)).toBe('a|none|small has warm sandboxes again');
  });

  it('publishes a target change, a pool appearing or retiring, and a new generation', () => {
    expect(significantChange(base, snap({ a: [4, 3], b: [2, 1] }))).toBe('target of a|none|small changed');
    expect(significantChange(base, snap({ a: [3, 3] }))).toBe('pool set changed');
    expect(significantChange(base, snap({ a: [3, 3], c: [2, 1] }))).toBe('pool set changed');
    expect(significantChange(base, snap({ a: [3, 3], b: [2, 1] }, {}, 5))).toBe('generation 5 applied');
  });

  it('publishes draining and at-capacity flipping either way', () => {
    const draining = snap({ a: [3, 3], b: [2, 1] }, { draining: true });
    expect(significantChange(base, draining)).toBe('draining started');
    expect(significantChange(draining, base)).toBe('draining lifted');
    const full = snap({ a: [3, 3], b: [2, 1] }, { at_capacity: true });
    expect(significantChange(base, full)).toBe('node at capacity');
    expect(significantChange(full, base)).toBe('node no longer at capacity');
  });

  it('does not depend on the order sandboxd lists pools in', () => {
    expect(significantChange(base, snap({ b: [2, 1], a: [3, 3] }))).toBeUndefined();
  });
});

describe('what cannot wait for the next write', () => {
  /** Generation `counter` of leadership epoch `epoch` (epoch · 2^21 + counter). */
  const gen = (epoch: number, counter: number): number => epoch * 2 ** 21 + counter;
  const published = snap({ a: [3, 3], b: [2, 1] }, {}, gen(7, 4));

  it('lets a push of the same leader term wait: its later generation and the targets it set', () => {
    expect(urgentChange(published, snap({ a: [4, 3], b: [2, 1] }, {}, gen(7, 5)))).toBeUndefined();
    expect(urgentChange(published, snap({ a: [3, 3], b: [2, 1] }, {}, gen(7, 9)))).toBeUndefined();
  });

  it("publishes a new leader term's first push soon, even one that moves no target", () => {
    expect(urgentChange(published, snap({ a: [3, 3], b: [2, 1] }, {}, gen(8, 0)))).toBe(
      `generation ${gen(8, 0)} applied`,
    );
    expect(urgentChange(snap({ a: [3, 3] }, {}, undefined), snap({ a: [3, 3] }, {}, gen(7, 0)))).toBe(
      `generation ${gen(7, 0)} applied`,
    );
  });

  it('publishes soon what readers act on, pushed or not: warm reaching or leaving 0, the pool set, drain', () => {
    expect(urgentChange(published, snap({ a: [4, 0], b: [2, 1] }, {}, gen(7, 5)))).toBe(
      'a|none|small ran out of warm sandboxes',
    );
    expect(urgentChange(published, snap({ a: [3, 3] }, {}, gen(7, 5)))).toBe('pool set changed');
    expect(urgentChange(published, snap({ a: [3, 3], b: [2, 1] }, { draining: true }, gen(7, 5)))).toBe(
      'draining started',
    );
  });

  it('publishes soon every push of epoch 0, which no leader takes (hand pushes, the reset to 0)', () => {
    expect(urgentChange(snap({ a: [3, 3] }, {}, 0), snap({ a: [3, 3] }, {}, 5))).toBe('generation 5 applied');
  });

  it('publishes soon a target that moved with no push (the generation stayed)', () => {
    expect(urgentChange(published, snap({ a: [5, 3], b: [2, 1] }, {}, gen(7, 4)))).toBe(
      'target of a|none|small changed',
    );
  });

  it('publishes the first snapshot', () => {
    expect(urgentChange(undefined, published)).toBe('first publish');
  });
});

describe('inventory status', () => {
  it('carries every field, so server-side apply never leaves a stale one behind', () => {
    const at = new Date('2030-01-02T03:04:05.678Z');
    expect(statusOf(base, at, 64)).toEqual({
      pools: [
        { template: 'a', net: 'none', size: 'small', target: 3, warm: 3, refilling: 0 },
        { template: 'b', net: 'none', size: 'small', target: 2, warm: 1, refilling: 0 },
      ],
      claimed: 0,
      capacity: 64,
      draining: false,
      atCapacity: false,
      publishedAt: '2030-01-02T03:04:05.678Z',
      appliedGeneration: 4,
    });
  });

  it('leaves out what is unknown: capacity, and a generation never applied', () => {
    const status = statusOf(snapshotOf(info({}), undefined), new Date(0), undefined);
    expect(status).not.toHaveProperty('capacity');
    expect(status).not.toHaveProperty('appliedGeneration');
  });

  it("carries each pool's claimed count when the agent counted them, and leaves it out when it could not", () => {
    const counted = snapshotOf(info({ a: [3, 3], b: [2, 1] }), 4, new Map([['a|none|small', 5]]));
    expect(counted.pools.map((p) => p.claimed)).toEqual([5, 0]);
    expect(base.pools.every((p) => !('claimed' in p))).toBe(true);
    expect(significantChange(base, counted)).toBeUndefined();
  });
});
