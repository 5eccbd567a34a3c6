// The federation transport against a real redis-server: what the Reporter
// writes, how the Watcher reads it (hint, full read), and how a record's age
// is taken from Redis's own TTL clock.
import { CapacityRegistry } from '@warmpool/federation';
import { eventually, federationRecord, startRedis, type MemberRecord, type TestRedis } from '@warmpool/harness';
import { silentLogger } from '@warmpool/runtime';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FederationKeys } from '../src/federation/keys.js';
import { FederationReporter } from '../src/federation/reporter.js';
import { FederationWatcher } from '../src/federation/watcher.js';

const record = (memberPool: string, idle = 1): MemberRecord =>
  federationRecord({ namespace: 'ns', envName: 'env', memberPool, scalingGroup: 'g' }, idle);

describe('the federation transport (real redis-server)', () => {
  let redis: TestRedis;
  const open: Array<{ close(): Promise<unknown> | void }> = [];
  let n = 0;

  const connection = (): Redis => {
    const c = new Redis(redis.url);
    open.push({ close: () => c.disconnect() });
    return c;
  };

  function reporter(
    clusterId: string,
    keys: FederationKeys,
    records: () => MemberRecord[],
    ttlMs = 3_000,
  ): FederationReporter {
    const r = new FederationReporter({
      redis: connection(),
      keys,
      clusterId,
      intervalMs: 1_000,
      ttlMs,
      records,
      logger: silentLogger,
    });
    open.push({ close: () => r.stop() });
    return r;
  }

  async function watcher(
    localClusterId: string,
    keys: FederationKeys,
    options: { ttlMs?: number; intervalMs?: number } = {},
  ): Promise<{ registry: CapacityRegistry; watcher: FederationWatcher }> {
    const registry = new CapacityRegistry({ localClusterId, ttlMs: options.ttlMs ?? 3_000 });
    const w = new FederationWatcher({
      redis: connection(),
      subscriber: connection(),
      keys,
      registry,
      intervalMs: options.intervalMs ?? 600_000,
      logger: silentLogger,
    });
    open.push({ close: () => w.stop() });
    await w.start();
    return { registry, watcher: w };
  }

  const freshKeys = (): FederationKeys => new FederationKeys(`t${++n}:federation`);

  beforeAll(async () => {
    redis = await startRedis();
  });

  afterEach(async () => {
    for (const c of open.splice(0)) await c.close();
  });

  afterAll(async () => {
    await redis?.stop();
  });

  it("writes one key per record with a PX TTL and the cluster's index, under the prefix, and nothing that says where a cluster is reached", async () => {
    const keys = freshKeys();
    await reporter('east', keys, () => [record('a'), record('b')]).report();
    const raw = connection();
    const found = (await raw.keys(`${keys.prefix}:*`)).sort();
    expect(found).toEqual(
      [
        keys.index('east'),
        keys.record({ clusterId: 'east', namespace: 'ns', envName: 'env', memberPool: 'a' }),
        keys.record({ clusterId: 'east', namespace: 'ns', envName: 'env', memberPool: 'b' }),
      ].sort(),
    );
    for (const key of found) {
      const pttl = await raw.pttl(key);
      expect(pttl).toBeGreaterThan(0);
      expect(pttl).toBeLessThanOrEqual(3_000);
    }
  });

  it('delivers a report to a watcher through the hint, without waiting for a full read', async () => {
    const keys = freshKeys();
    const { registry } = await watcher('west', keys, { intervalMs: 600_000 });
    await new Promise((resolve) => setTimeout(resolve, 200)); // the subscription is in place
    await reporter('east', keys, () => [record('a', 4)]).report();
    const seen = await eventually(() => registry.foreignMembers('ns', 'env')[0], {
      what: 'the hinted record',
      timeoutMs: 5_000,
    });
    expect(seen).toMatchObject({ clusterId: 'east', memberPool: 'a', idle: 4 });
    expect(seen.ageMs).toBeLessThan(1_000);
  });

  it("finds every cluster by a full read (SCAN over the index keys), and never takes its own cluster's records as foreign", async () => {
    const keys = freshKeys();
    await reporter('east', keys, () => [record('a')]).report();
    await reporter('north', keys, () => [record('b')]).report();
    await reporter('west', keys, () => [record('c')]).report();
    const { registry, watcher: w } = await watcher('west', keys);
    await w.readAll();
    expect(registry.foreignMembers('ns', 'env').map((m) => `${m.clusterId}/${m.memberPool}`)).toEqual([
      'east/a',
      'north/b',
    ]);
    expect(await w.readCluster('west')).toBe(0);
  });

  it("takes a record's age from its remaining TTL in Redis, whatever its writer's clock said", async () => {
    const keys = freshKeys();
    const raw = connection();
    const key = keys.record({ clusterId: 'east', namespace: 'ns', envName: 'env', memberPool: 'a' });
    // Written with a 10 s TTL of which 2 s remain: 8 s old.
    await raw.set(key, JSON.stringify({ ttlMs: 10_000, record: { clusterId: 'east', ...record('a') } }), 'PX', 2_000);
    await raw.set(keys.index('east'), JSON.stringify([key]), 'PX', 2_000);
    const lenient = await watcher('west', keys, { ttlMs: 9_000 });
    await lenient.watcher.readAll();
    const [member] = lenient.registry.foreignMembers('ns', 'env');
    expect(member?.ageMs).toBeGreaterThanOrEqual(8_000);
    expect(member?.ageMs).toBeLessThan(8_500);
    const strict = await watcher('west', keys, { ttlMs: 5_000 });
    await strict.watcher.readAll();
    expect(strict.registry.foreignMembers('ns', 'env')).toEqual([]);
  });

  it('skips entries that fail the schema, or carry no TTL, or name another cluster, and keeps the rest', async () => {
    const keys = freshKeys();
    const raw = connection();
    const good = keys.record({ clusterId: 'east', namespace: 'ns', envName: 'env', memberPool: 'good' });
    const garbage = `${keys.prefix}:rec:garbage`;
    const negative = `${keys.prefix}:rec:negative`;
    const forever = `${keys.prefix}:rec:forever`;
    const impostor = `${keys.prefix}:rec:impostor`;
    const entry = (memberPool: string, overrides: Record<string, unknown> = {}): string =>
      JSON.stringify({ ttlMs: 3_000, record: { clusterId: 'east', ...record(memberPool), ...overrides } });
    await raw.set(good, entry('good'), 'PX', 3_000);
    await raw.set(garbage, '{not json', 'PX', 3_000);
    await raw.set(negative, entry('negative', { idle: -5 }), 'PX', 3_000);
    await raw.set(forever, entry('forever'));
    await raw.set(impostor, entry('impostor', { clusterId: 'north' }), 'PX', 3_000);
    await raw.set(keys.index('east'), JSON.stringify([good, garbage, negative, forever, impostor, 42]), 'PX', 3_000);
    const { registry, watcher: w } = await watcher('west', keys);
    // The watcher's own first full read (started, not awaited, by start()) counts what it skips too: let it finish.
    await w.readAll();
    const before = w.invalidEntries;
    expect(await w.readCluster('east')).toBe(1);
    expect(registry.foreignMembers('ns', 'env').map((m) => m.memberPool)).toEqual(['good']);
    expect(w.invalidEntries - before).toBe(2);
    await raw.set(keys.index('east'), 'not an index', 'PX', 3_000);
    expect(await w.readCluster('east')).toBe(0);
  });
});
