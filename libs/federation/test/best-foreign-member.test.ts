import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { UNBOUNDED_HEADROOM, type CapacityObservation, type ForeignChoice } from '../src/index.js';
import { LOCAL, member, registryWithClock } from './support.js';

const idleMember = (
  clusterId: string,
  memberPool: string,
  idle: number,
  extra: Partial<CapacityObservation> = {},
): CapacityObservation => member({ clusterId, memberPool, idle, ...extra });
const growingMember = (
  clusterId: string,
  memberPool: string,
  capacity: number,
  extra: Partial<CapacityObservation> = {},
): CapacityObservation => member({ clusterId, memberPool, idle: 0, autoscalingEnabled: true, capacity, ...extra });
const choice = (clusterId: string, memberPool: string, idle: number): ForeignChoice => ({
  clusterId,
  memberPool,
  idle,
});

interface Row {
  rule: string;
  records: CapacityObservation[];
  group?: string;
  expected: ForeignChoice | undefined;
}

const rows: Row[] = [
  // Tiers: any idle member outranks every pure scale-up member.
  {
    rule: 'an idle member outranks an unbounded scale-up member',
    records: [growingMember('a', 'p', UNBOUNDED_HEADROOM), idleMember('b', 'p', 1)],
    expected: choice('b', 'p', 1),
  },
  {
    rule: 'an idle member outranks a scale-up member with vast headroom',
    records: [growingMember('a', 'p', 1_000_000), idleMember('b', 'p', 1)],
    expected: choice('b', 'p', 1),
  },
  {
    rule: 'an idle member at its ceiling still outranks scale-up members',
    records: [growingMember('a', 'p', 5), idleMember('b', 'p', 1, { autoscalingEnabled: true, capacity: 0 })],
    expected: choice('b', 'p', 1),
  },
  // Within idle: more idle wins, headroom is ignored.
  {
    rule: 'more idle wins within the idle tier',
    records: [idleMember('a', 'p', 2), idleMember('b', 'p', 5), idleMember('c', 'p', 3)],
    expected: choice('b', 'p', 5),
  },
  {
    rule: 'headroom does not break an idle tie (cluster does)',
    records: [
      idleMember('b', 'p', 3, { autoscalingEnabled: true, capacity: UNBOUNDED_HEADROOM }),
      idleMember('a', 'p', 3),
    ],
    expected: choice('a', 'p', 3),
  },
  // Within scale-up: more headroom wins, unbounded highest; idle reported as 0.
  {
    rule: 'more headroom wins within the scale-up tier',
    records: [growingMember('a', 'p', 2), growingMember('b', 'p', 7), growingMember('c', 'p', 3)],
    expected: choice('b', 'p', 0),
  },
  {
    rule: 'unbounded headroom beats any finite headroom',
    records: [growingMember('a', 'p', Number.MAX_SAFE_INTEGER), growingMember('b', 'p', UNBOUNDED_HEADROOM)],
    expected: choice('b', 'p', 0),
  },
  {
    rule: 'a member chosen for headroom reports idle 0 even if its record says negative idle',
    records: [growingMember('a', 'p', 2, { idle: -3 })],
    expected: choice('a', 'p', 0),
  },
  // Ties: (cluster, pool) ascending, by code unit.
  {
    rule: 'an idle tie breaks on cluster ascending',
    records: [idleMember('b', 'p', 2), idleMember('a', 'z', 2)],
    expected: choice('a', 'z', 2),
  },
  {
    rule: 'an idle tie in one cluster breaks on pool ascending',
    records: [idleMember('a', 'pool-b', 2), idleMember('a', 'pool-a', 2)],
    expected: choice('a', 'pool-a', 2),
  },
  {
    rule: 'an unbounded tie breaks on cluster ascending',
    records: [growingMember('b', 'p', UNBOUNDED_HEADROOM), growingMember('a', 'p', UNBOUNDED_HEADROOM)],
    expected: choice('a', 'p', 0),
  },
  {
    rule: 'a finite headroom tie breaks on pool ascending',
    records: [growingMember('a', 'q', 4), growingMember('a', 'p', 4)],
    expected: choice('a', 'p', 0),
  },
  {
    rule: 'ties order by code unit, not locale (uppercase sorts first)',
    records: [idleMember('a', 'p', 1), idleMember('B', 'p', 1)],
    expected: choice('B', 'p', 1),
  },
  // Eligibility: schedulable, foreign, in the Env and group.
  {
    rule: 'a member at its ceiling with nothing idle is never chosen',
    records: [growingMember('a', 'p', 0)],
    expected: undefined,
  },
  {
    rule: 'a member without autoscaling and nothing idle is never chosen, whatever its capacity says',
    records: [member({ clusterId: 'a', capacity: 5 })],
    expected: undefined,
  },
  {
    rule: 'an unschedulable member gives way to a schedulable one',
    records: [growingMember('a', 'p', 0), growingMember('b', 'p', 1)],
    expected: choice('b', 'p', 0),
  },
  {
    rule: 'the local cluster is never chosen, however much idle it has',
    records: [idleMember(LOCAL, 'p', 100), idleMember('z', 'p', 1)],
    expected: choice('z', 'p', 1),
  },
  {
    rule: 'nothing qualifies when only the local cluster has capacity',
    records: [idleMember(LOCAL, 'p', 100), growingMember(LOCAL, 'q', UNBOUNDED_HEADROOM)],
    expected: undefined,
  },
  {
    rule: 'a member of another group is ignored',
    group: 'gpu',
    records: [idleMember('a', 'p', 9, { scalingGroup: 'cpu' }), idleMember('b', 'p', 1, { scalingGroup: 'gpu' })],
    expected: choice('b', 'p', 1),
  },
  {
    rule: 'the empty group considers every group',
    group: '',
    records: [idleMember('a', 'p', 9, { scalingGroup: 'cpu' }), idleMember('b', 'p', 1, { scalingGroup: 'gpu' })],
    expected: choice('a', 'p', 9),
  },
  {
    rule: 'nothing qualifies when no member is in the group',
    group: 'tpu',
    records: [idleMember('a', 'p', 9)],
    expected: undefined,
  },
  {
    rule: 'members of another Env or namespace are ignored',
    records: [
      idleMember('a', 'p', 9, { envName: 'other' }),
      idleMember('b', 'p', 8, { namespace: 'other' }),
      idleMember('c', 'p', 1),
    ],
    expected: choice('c', 'p', 1),
  },
];

describe('CapacityRegistry.bestForeignMember ranking', () => {
  it.each(rows)('$rule', ({ records, group, expected }) => {
    for (const order of [records, [...records].reverse()]) {
      const { registry } = registryWithClock();
      registry.upsert(order);
      expect(registry.bestForeignMember('ns', 'env', group)).toEqual(expected);
    }
  });

  it('treats an omitted group as every group', () => {
    const { registry } = registryWithClock();
    registry.upsert([idleMember('a', 'p', 1, { scalingGroup: 'cpu' })]);
    expect(registry.bestForeignMember('ns', 'env')).toEqual(choice('a', 'p', 1));
  });

  it('agrees with a sort-based reading of the rules on random fleets', () => {
    const record = fc.record({
      clusterId: fc.constantFrom(LOCAL, 'a', 'b', 'c'),
      memberPool: fc.constantFrom('p1', 'p2', 'p3'),
      scalingGroup: fc.constantFrom('gpu', 'cpu'),
      idle: fc.integer({ min: 0, max: 3 }),
      autoscalingEnabled: fc.boolean(),
      capacity: fc.integer({ min: -1, max: 3 }),
    });
    fc.assert(
      fc.property(fc.array(record, { maxLength: 30 }), fc.constantFrom('', 'gpu', 'cpu'), (drawn, group) => {
        const { registry } = registryWithClock();
        const records = drawn.map((r) => member(r));
        registry.upsert(records);
        expect(registry.bestForeignMember('ns', 'env', group)).toEqual(oracle(records, group));
      }),
      { numRuns: 500 },
    );
  });
});

/** The rules restated as one sort key, independent of the implementation's comparator. */
function oracle(records: CapacityObservation[], group: string): ForeignChoice | undefined {
  const latest = new Map(records.map((r) => [`${r.clusterId}/${r.memberPool}`, r]));
  const candidates = [...latest.values()].filter(
    (r) =>
      r.clusterId !== LOCAL &&
      (group === '' || r.scalingGroup === group) &&
      (r.idle > 0 || (r.autoscalingEnabled && r.capacity !== 0)),
  );
  const key = (r: CapacityObservation): [number, number] =>
    r.idle > 0 ? [0, -r.idle] : [1, r.capacity === -1 ? -Infinity : -r.capacity];
  candidates.sort((x, y) => {
    const [xt, xv] = key(x);
    const [yt, yv] = key(y);
    if (xt !== yt) return xt - yt;
    if (xv !== yv) return xv < yv ? -1 : 1;
    if (x.clusterId !== y.clusterId) return x.clusterId < y.clusterId ? -1 : 1;
    return x.memberPool < y.memberPool ? -1 : x.memberPool > y.memberPool ? 1 : 0;
  });
  const best = candidates[0];
  return best === undefined
    ? undefined
    : { clusterId: best.clusterId, memberPool: best.memberPool, idle: best.idle > 0 ? best.idle : 0 };
}
