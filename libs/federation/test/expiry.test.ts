import { describe, expect, it } from 'vitest';
import { CapacityRegistry, type CapacityObservation } from '../src/index.js';
import { ManualClock } from '@warmpool/harness';
import { LOCAL, TTL_MS, member, registryWithClock } from './support.js';

// A record is live while its age < ttl, and expired from age === ttl on.
const edges = [
  { age: 0, live: true, when: 'just observed' },
  { age: TTL_MS - 1, live: true, when: 'one millisecond before expiry' },
  { age: TTL_MS - 0.001, live: true, when: 'a microsecond before expiry' },
  { age: TTL_MS, live: false, when: 'exactly at expiry' },
  { age: TTL_MS + 0.001, live: false, when: 'a microsecond after expiry' },
  { age: TTL_MS * 100, live: false, when: 'long after expiry' },
];

const schedulableForeign = member({ clusterId: 'east', idle: 1 });
const growingLocal = member({
  clusterId: LOCAL,
  memberPool: 'local-pool',
  idle: 4,
  autoscalingEnabled: true,
  capacity: -1,
});

/** What each query answers when the two records above are live, and when they are not. */
const queries = [
  { name: 'snapshot', read: (r: CapacityRegistry) => r.snapshot().length, whenLive: 2, whenExpired: 0 },
  {
    name: 'foreignMembers',
    read: (r: CapacityRegistry) => r.foreignMembers('ns', 'env').length,
    whenLive: 1,
    whenExpired: 0,
  },
  { name: 'localIdle', read: (r: CapacityRegistry) => r.localIdle('ns', 'env', ''), whenLive: 4, whenExpired: 0 },
  {
    name: 'localCanGrow',
    read: (r: CapacityRegistry) => r.localCanGrow('ns', 'env', ''),
    whenLive: true,
    whenExpired: false,
  },
  {
    name: 'bestForeignMember',
    read: (r: CapacityRegistry) => r.bestForeignMember('ns', 'env', '')?.clusterId,
    whenLive: 'east',
    whenExpired: undefined,
  },
];

describe.each(queries)('$name at the TTL edges', ({ read, whenLive, whenExpired }) => {
  it.each(edges)('sees the record $when (age $age ms): live=$live, as the clock advanced', ({ age, live }) => {
    const { registry, clock } = registryWithClock();
    registry.upsert([schedulableForeign, growingLocal]);
    clock.advance(age);
    expect(read(registry)).toEqual(live ? whenLive : whenExpired);
  });

  it.each(edges)('sees the record $when (age $age ms): live=$live, as the hub reported the age', ({ age, live }) => {
    const { registry } = registryWithClock();
    registry.upsert([schedulableForeign, growingLocal].map((r) => ({ ...r, ageMs: age })));
    expect(read(registry)).toEqual(live ? whenLive : whenExpired);
  });
});

describe('CapacityRegistry ageing', () => {
  it('stores a record reported with an age so that it expires ttl - age later', () => {
    const { registry, clock } = registryWithClock();
    registry.upsert([{ ...member(), ageMs: 4_000 }]);
    clock.advance(TTL_MS - 4_000 - 1);
    expect(registry.snapshot()).toHaveLength(1);
    clock.advance(1);
    expect(registry.snapshot()).toHaveLength(0);
  });

  it('treats a negative age as observed now, never granting life beyond the ttl', () => {
    const { registry, clock } = registryWithClock();
    registry.upsert([{ ...member(), ageMs: -5_000 }]);
    expect(registry.snapshot()[0]?.ageMs).toBe(0);
    clock.advance(TTL_MS);
    expect(registry.snapshot()).toHaveLength(0);
  });

  it('drops a sample that is already expired on arrival, without counting it', () => {
    const { registry } = registryWithClock();
    registry.upsert([
      { ...member(), ageMs: TTL_MS },
      { ...member({ memberPool: 'b' }), ageMs: Number.POSITIVE_INFINITY },
    ]);
    expect(registry.size).toBe(0);
  });

  it('gives a refreshed record a full ttl from the refresh', () => {
    const { registry, clock } = registryWithClock();
    registry.upsert([member({ memberPool: 'a' }), member({ memberPool: 'b' })]);
    clock.advance(6_000);
    registry.upsert([member({ memberPool: 'a', idle: 2 })]);
    clock.advance(TTL_MS - 6_000);
    expect(registry.snapshot().map((r) => [r.memberPool, r.idle])).toEqual([['a', 2]]);
    clock.advance(6_000 - 1);
    expect(registry.snapshot()).toHaveLength(1);
    clock.advance(1);
    expect(registry.snapshot()).toHaveLength(0);
  });

  it('lets a fresh sample replace an expired record of the same member', () => {
    const { registry, clock } = registryWithClock();
    registry.upsert([member({ idle: 1 })]);
    clock.advance(TTL_MS);
    registry.upsert([member({ idle: 2 })]);
    expect(registry.size).toBe(1);
    expect(registry.snapshot().map((r) => r.idle)).toEqual([2]);
  });

  it('judges freshness only by reported age, whatever the local clock reads (immune to skew)', () => {
    const sample: CapacityObservation = { ...member({ idle: 1 }), ageMs: TTL_MS - 10 };
    for (const start of [0, 1e12, -1e9]) {
      let now = start;
      const registry = new CapacityRegistry({ localClusterId: LOCAL, ttlMs: TTL_MS, now: () => now });
      registry.upsert([sample]);
      now += 9;
      expect(registry.bestForeignMember('ns', 'env')).toEqual({ clusterId: 'east', memberPool: 'pool-a', idle: 1 });
      now += 1;
      expect(registry.bestForeignMember('ns', 'env')).toBeUndefined();
    }
  });
});

describe('CapacityRegistry pruning', () => {
  it('prune() drops every expired record and reports how many went', () => {
    const { registry, clock } = registryWithClock();
    registry.upsert([member({ envName: 'a' }), member({ envName: 'b' })]);
    clock.advance(5_000);
    registry.upsert([member({ envName: 'c' })]);
    clock.advance(TTL_MS - 5_000);
    expect(registry.size).toBe(3);
    expect(registry.prune()).toBe(2);
    expect(registry.size).toBe(1);
    expect(registry.prune()).toBe(0);
  });

  it('drops the expired records of the Env a query reads, leaving other Envs to prune()', () => {
    const { registry, clock } = registryWithClock();
    registry.upsert([
      member({ envName: 'env', memberPool: 'a' }),
      member({ envName: 'env', memberPool: 'b' }),
      member({ envName: 'other' }),
    ]);
    clock.advance(TTL_MS);
    expect(registry.bestForeignMember('ns', 'env')).toBeUndefined();
    expect(registry.size).toBe(1);
    expect(registry.prune()).toBe(1);
    expect(registry.size).toBe(0);
  });

  it('snapshot() drops what it finds expired', () => {
    const { registry, clock } = registryWithClock();
    registry.upsert([member()]);
    clock.advance(TTL_MS);
    expect(registry.snapshot()).toEqual([]);
    expect(registry.size).toBe(0);
  });

  it('keeps a live record when a query prunes an expired neighbour of the same Env', () => {
    const clock = new ManualClock(5_000);
    const registry = new CapacityRegistry({ localClusterId: LOCAL, ttlMs: TTL_MS, now: clock.now });
    registry.upsert([member({ memberPool: 'old', idle: 9 })]);
    clock.advance(1);
    registry.upsert([member({ memberPool: 'new', idle: 1 })]);
    clock.advance(TTL_MS - 1);
    expect(registry.bestForeignMember('ns', 'env')).toEqual({ clusterId: 'east', memberPool: 'new', idle: 1 });
    expect(registry.size).toBe(1);
    clock.advance(1);
    expect(registry.bestForeignMember('ns', 'env')).toBeUndefined();
    expect(registry.size).toBe(0);
  });
});

describe('renewing and removing a cluster’s records (its unchanged and deleted members)', () => {
  it("renews every live record of one cluster to the age its cluster reported, and no other cluster's", () => {
    const { registry, clock } = registryWithClock();
    registry.upsert([member({ clusterId: 'east', memberPool: 'a' }), member({ clusterId: 'west', memberPool: 'b' })]);
    clock.advance(TTL_MS - 1);
    expect(registry.renew('east', 100)).toBe(1);
    clock.advance(2);
    expect(registry.snapshot().map((r) => [r.clusterId, r.ageMs])).toEqual([['east', 102]]);
  });

  it('never makes a record older, nor revives one that has expired', () => {
    const { registry, clock } = registryWithClock();
    registry.upsert([{ ...member({ clusterId: 'east' }), ageMs: 0 }]);
    expect(registry.renew('east', 5_000)).toBe(1);
    expect(registry.snapshot()[0]?.ageMs).toBe(0);
    clock.advance(TTL_MS);
    expect(registry.renew('east', 0)).toBe(0);
    expect(registry.snapshot()).toEqual([]);
  });

  it('renews the record that replaced an older one, not the one it replaced', () => {
    const { registry, clock } = registryWithClock();
    registry.upsert([member({ clusterId: 'east', idle: 1 })]);
    registry.upsert([member({ clusterId: 'east', idle: 2 })]);
    clock.advance(TTL_MS - 1);
    expect(registry.renew('east', 0)).toBe(1);
    clock.advance(TTL_MS - 1);
    expect(registry.snapshot().map((r) => r.idle)).toEqual([2]);
    expect(registry.size).toBe(1);
  });

  it('removes named members at once and leaves the rest', () => {
    const { registry } = registryWithClock();
    registry.upsert([member({ clusterId: 'east', memberPool: 'a' }), member({ clusterId: 'east', memberPool: 'b' })]);
    expect(registry.remove([{ clusterId: 'east', namespace: 'ns', envName: 'env', memberPool: 'a' }])).toBe(1);
    expect(registry.remove([{ clusterId: 'east', namespace: 'ns', envName: 'env', memberPool: 'a' }])).toBe(0);
    expect(registry.snapshot().map((r) => r.memberPool)).toEqual(['b']);
    expect(registry.size).toBe(1);
    expect(registry.renew('east', 0)).toBe(1);
  });
});
