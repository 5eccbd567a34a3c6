import { describe, expect, it } from 'vitest';
import { CapacityRegistry, toForeignClusterMember, type CapacityObservation } from '../src/index.js';
import { LOCAL, member, registryWithClock } from './support.js';

const identity = (r: { clusterId: string; namespace: string; envName: string; memberPool: string }): string =>
  `${r.clusterId}/${r.namespace}/${r.envName}/${r.memberPool}`;

describe('CapacityRegistry construction', () => {
  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])('rejects a ttl of %s ms', (ttlMs) => {
    expect(() => new CapacityRegistry({ localClusterId: LOCAL, ttlMs })).toThrow(RangeError);
  });

  it('keeps the local cluster id and ttl it was given', () => {
    const registry = new CapacityRegistry({ localClusterId: 'here', ttlMs: 1_500 });
    expect(registry.localClusterId).toBe('here');
    expect(registry.ttlMs).toBe(1_500);
  });

  it('runs on the real monotonic clock when none is injected', () => {
    const registry = new CapacityRegistry({ localClusterId: LOCAL, ttlMs: 60_000 });
    registry.upsert([member()]);
    expect(registry.snapshot()).toHaveLength(1);
  });
});

describe('CapacityRegistry.upsert and snapshot', () => {
  it('returns every live record, local and foreign, sorted by cluster, namespace, env and pool', () => {
    const { registry } = registryWithClock();
    registry.upsert([
      member({ clusterId: 'west', memberPool: 'b' }),
      member({ clusterId: LOCAL, memberPool: 'a' }),
      member({ clusterId: 'east', namespace: 'z', memberPool: 'a' }),
      member({ clusterId: 'east', envName: 'b-env', memberPool: 'z' }),
      member({ clusterId: 'east', envName: 'a-env', memberPool: 'z' }),
      member({ clusterId: 'east', envName: 'a-env', memberPool: 'y' }),
    ]);
    expect(registry.snapshot().map(identity)).toEqual([
      'east/ns/a-env/y',
      'east/ns/a-env/z',
      'east/ns/b-env/z',
      'east/z/env/a',
      'local/ns/env/a',
      'west/ns/env/b',
    ]);
  });

  it('reports each record with every field and its age at the time of the read', () => {
    const { registry, clock } = registryWithClock();
    const sample = member({
      idle: 3,
      running: 4,
      pending: 5,
      desired: 6,
      autoscalingEnabled: true,
      capacity: 7,
      saturatedForMs: 8,
    });
    registry.upsert([{ ...sample, ageMs: 250 }]);
    clock.advance(100);
    expect(registry.snapshot()).toEqual([{ ...sample, ageMs: 350 }]);
  });

  it.each([
    { part: 'cluster', other: { clusterId: 'west' } },
    { part: 'namespace', other: { namespace: 'ns2' } },
    { part: 'env', other: { envName: 'env2' } },
    { part: 'member pool', other: { memberPool: 'pool-b' } },
  ])('keeps two records apart when only the $part differs', ({ other }) => {
    const { registry } = registryWithClock();
    registry.upsert([member({ idle: 1 }), member({ ...other, idle: 2 })]);
    expect(
      registry
        .snapshot()
        .map((r) => r.idle)
        .sort(),
    ).toEqual([1, 2]);
    expect(registry.size).toBe(2);
  });

  it('replaces the record of the same (cluster, namespace, env, pool), scaling group included', () => {
    const { registry } = registryWithClock();
    registry.upsert([member({ idle: 1, scalingGroup: 'gpu' })]);
    registry.upsert([member({ idle: 9, scalingGroup: 'cpu' })]);
    expect(registry.snapshot()).toEqual([{ ...member({ idle: 9, scalingGroup: 'cpu' }), ageMs: 0 }]);
    expect(registry.size).toBe(1);
  });

  it('keeps the newer observation when an older copy of the same record arrives later', () => {
    const { registry } = registryWithClock();
    registry.upsert([{ ...member({ idle: 5 }), ageMs: 100 }]);
    registry.upsert([{ ...member({ idle: 1 }), ageMs: 900 }]);
    expect(registry.snapshot()).toEqual([{ ...member({ idle: 5 }), ageMs: 100 }]);
  });

  it('lets a sample of the same age replace the held one (the later call wins)', () => {
    const { registry } = registryWithClock();
    registry.upsert([{ ...member({ idle: 5 }), ageMs: 100 }]);
    registry.upsert([{ ...member({ idle: 6 }), ageMs: 100 }]);
    expect(registry.snapshot()[0]?.idle).toBe(6);
  });

  it("does not retain the caller's objects", () => {
    const { registry } = registryWithClock();
    const sample: CapacityObservation & { extra?: string } = { ...member({ idle: 1 }), extra: 'dropped' };
    registry.upsert([sample]);
    sample.idle = 99;
    const [read] = registry.snapshot();
    expect(read).toEqual({ ...member({ idle: 1 }), ageMs: 0 });
    if (read !== undefined) read.idle = 42;
    expect(registry.snapshot()[0]?.idle).toBe(1);
  });

  it('accepts any iterable, such as a generator', () => {
    const { registry } = registryWithClock();
    function* samples(): Generator<CapacityObservation> {
      yield member({ memberPool: 'a' });
      yield member({ memberPool: 'b' });
    }
    registry.upsert(samples());
    expect(registry.size).toBe(2);
  });

  it('rejects a batch holding a NaN age and leaves the registry untouched', () => {
    const { registry } = registryWithClock();
    registry.upsert([member({ idle: 1 })]);
    expect(() => registry.upsert([member({ idle: 2 }), { ...member({ memberPool: 'b' }), ageMs: Number.NaN }])).toThrow(
      RangeError,
    );
    expect(registry.snapshot().map((r) => r.idle)).toEqual([1]);
  });

  it('is empty to begin with', () => {
    const { registry } = registryWithClock();
    expect(registry.snapshot()).toEqual([]);
    expect(registry.size).toBe(0);
    expect(registry.foreignMembers('ns', 'env')).toEqual([]);
    expect(registry.localIdle('ns', 'env')).toBe(0);
    expect(registry.localCanGrow('ns', 'env')).toBe(false);
    expect(registry.bestForeignMember('ns', 'env')).toBeUndefined();
  });
});

describe('CapacityRegistry.foreignMembers', () => {
  it("lists the Env's records of other clusters only, sorted by cluster then pool, schedulable or not", () => {
    const { registry } = registryWithClock();
    registry.upsert([
      member({ clusterId: 'west', memberPool: 'a' }),
      member({ clusterId: 'east', memberPool: 'b', idle: 2 }),
      member({ clusterId: 'east', memberPool: 'a', autoscalingEnabled: true, capacity: -1 }),
      member({ clusterId: LOCAL, memberPool: 'a', idle: 8 }),
      member({ clusterId: 'east', memberPool: 'c', envName: 'other-env' }),
      member({ clusterId: 'east', memberPool: 'd', namespace: 'other-ns' }),
    ]);
    expect(registry.foreignMembers('ns', 'env').map(identity)).toEqual([
      'east/ns/env/a',
      'east/ns/env/b',
      'west/ns/env/a',
    ]);
  });

  it('converts to SandboxEnv.status.clusters entries, without the age (every status write would change)', () => {
    const { registry, clock } = registryWithClock();
    const sample = member({ idle: 1, running: 2, pending: 3, desired: 4, autoscalingEnabled: true, capacity: 5 });
    registry.upsert([sample]);
    clock.advance(1_234.6);
    expect(registry.foreignMembers('ns', 'env').map(toForeignClusterMember)).toEqual([
      {
        clusterId: 'east',
        memberPool: 'pool-a',
        scalingGroup: 'gpu',
        idle: 1,
        running: 2,
        pending: 3,
        desired: 4,
        autoscalingEnabled: true,
        capacity: 5,
      },
    ]);
  });
});

describe('CapacityRegistry.localIdle', () => {
  const records = [
    member({ clusterId: LOCAL, memberPool: 'g1', scalingGroup: 'gpu', idle: 2 }),
    member({ clusterId: LOCAL, memberPool: 'g2', scalingGroup: 'gpu', idle: 3 }),
    member({ clusterId: LOCAL, memberPool: 'c1', scalingGroup: 'cpu', idle: 7 }),
    member({ clusterId: 'east', memberPool: 'g1', scalingGroup: 'gpu', idle: 100 }),
    member({ clusterId: LOCAL, memberPool: 'x', envName: 'other-env', scalingGroup: 'gpu', idle: 1_000 }),
    member({ clusterId: LOCAL, memberPool: 'y', namespace: 'other-ns', scalingGroup: 'gpu', idle: 10_000 }),
  ];

  it.each([
    { group: 'gpu', expected: 5, why: 'sums the local members of the group' },
    { group: 'cpu', expected: 7, why: 'a single local member' },
    { group: '', expected: 12, why: 'the empty group is every group' },
    { group: 'tpu', expected: 0, why: 'no member in the group' },
  ])('is $expected for group "$group" ($why), never counting foreign clusters or other Envs', ({ group, expected }) => {
    const { registry } = registryWithClock();
    registry.upsert(records);
    expect(registry.localIdle('ns', 'env', group)).toBe(expected);
  });

  it('treats an omitted group as every group', () => {
    const { registry } = registryWithClock();
    registry.upsert(records);
    expect(registry.localIdle('ns', 'env')).toBe(12);
  });
});

describe('CapacityRegistry.localCanGrow', () => {
  it.each([
    {
      why: 'a local member of the group autoscales with room',
      records: [member({ clusterId: LOCAL, autoscalingEnabled: true, capacity: 2 })],
      group: 'gpu',
      expected: true,
    },
    {
      why: 'a local member autoscales without bound',
      records: [member({ clusterId: LOCAL, autoscalingEnabled: true, capacity: -1 })],
      group: 'gpu',
      expected: true,
    },
    {
      why: 'the only local member is at its ceiling',
      records: [member({ clusterId: LOCAL, autoscalingEnabled: true, capacity: 0 })],
      group: 'gpu',
      expected: false,
    },
    {
      why: 'the only local member does not autoscale',
      records: [member({ clusterId: LOCAL, capacity: 5, idle: 3 })],
      group: 'gpu',
      expected: false,
    },
    {
      why: 'only a foreign member can grow',
      records: [member({ clusterId: 'east', autoscalingEnabled: true, capacity: -1 })],
      group: 'gpu',
      expected: false,
    },
    {
      why: 'the growing local member is in another group',
      records: [member({ clusterId: LOCAL, scalingGroup: 'cpu', autoscalingEnabled: true, capacity: 1 })],
      group: 'gpu',
      expected: false,
    },
    {
      why: 'the empty group matches the member in any group',
      records: [member({ clusterId: LOCAL, scalingGroup: 'cpu', autoscalingEnabled: true, capacity: 1 })],
      group: '',
      expected: true,
    },
    {
      why: 'the growing local member belongs to another Env',
      records: [member({ clusterId: LOCAL, envName: 'other', autoscalingEnabled: true, capacity: 1 })],
      group: '',
      expected: false,
    },
    {
      why: 'one of several local members can grow',
      records: [
        member({ clusterId: LOCAL, memberPool: 'a', autoscalingEnabled: true, capacity: 0 }),
        member({ clusterId: LOCAL, memberPool: 'b', autoscalingEnabled: true, capacity: 3 }),
      ],
      group: 'gpu',
      expected: true,
    },
  ])('is $expected when $why', ({ records, group, expected }) => {
    const { registry } = registryWithClock();
    registry.upsert(records);
    expect(registry.localCanGrow('ns', 'env', group)).toBe(expected);
  });
});
