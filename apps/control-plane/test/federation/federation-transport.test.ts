// The federation transport against a real redis-server: what the Reporter
// writes, how the Watcher reads it (hint, directory), what an unchanged or a
// slightly changed fleet costs the hub, how a record's age is taken from the
// hub's own clock, and what happens when the hub loses keys.
import { CapacityRegistry } from '@warmpool/federation';
import {
  eventually,
  federationRecord,
  redisCommandStats,
  startRedis,
  type MemberRecord,
  type TestRedis,
} from '@warmpool/harness';
import { silentLogger } from '@warmpool/runtime';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RETENTION } from '../../src/federation/hub-scripts.js';
import { FederationKeys } from '../../src/federation/keys.js';
import { FederationReporter } from '../../src/federation/reporter.js';
import { FederationWatcher } from '../../src/federation/watcher.js';

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
    options: { ttlMs?: number; intervalMs?: number; now?: () => number } = {},
  ): Promise<{ registry: CapacityRegistry; watcher: FederationWatcher }> {
    const registry = new CapacityRegistry({
      localClusterId,
      ttlMs: options.ttlMs ?? 3_000,
      ...(options.now === undefined ? {} : { now: options.now }),
    });
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

  /** Calls per command on the hub since `before` (INFO commandstats; a script's own calls included). */
  async function callsSince(before: Map<string, number>): Promise<Map<string, number>> {
    const after = await redisCommandStats(connection());
    return new Map([...after].map(([name, calls]) => [name, calls - (before.get(name) ?? 0)]));
  }

  it("keeps a cluster's records in one hash with a PX TTL, its change log and its directory entry, and nothing that says where a cluster is reached", async () => {
    const keys = freshKeys();
    await reporter('east', keys, () => [record('a'), record('b')]).report();
    const raw = connection();
    const found = (await raw.keys(`${keys.prefix}:*`)).sort();
    expect(found).toEqual([keys.changes('east'), keys.directory, keys.records('east')].sort());
    for (const key of [keys.records('east'), keys.changes('east')]) {
      const pttl = await raw.pttl(key);
      expect(pttl).toBeGreaterThan(0);
      // Kept for RETENTION TTLs, so a late reporter goes on with a delta; liveness is the directory entry's.
      expect(pttl).toBeLessThanOrEqual(RETENTION * 3_000);
    }
    expect(Object.keys(await raw.hgetall(keys.records('east'))).sort()).toEqual(['ns/env/a', 'ns/env/b']);
    expect(await raw.hget(keys.directory, 'east')).toMatch(/^[0-9a-f]+:1:\d+:3000$/);
  });

  it('delivers a report to a watcher through the hint, without waiting for the periodic read', async () => {
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

  it("finds every cluster through the hub's directory, and never takes its own cluster's records as foreign", async () => {
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

  it("takes a record's age from the hub's clock at its cluster's last report, whatever its writer's clock said", async () => {
    const keys = freshKeys();
    await reporter('east', keys, () => [record('a')], 10_000).report();
    const raw = connection();
    // Move the last report 8 s into the past of the hub's own clock.
    const [seconds, micros] = (await raw.time()) as [number | string, number | string];
    const hubNow = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    const entry = (await raw.hget(keys.directory, 'east')) ?? '';
    await raw.hset(keys.directory, 'east', entry.replace(/:\d+:(\d+)$/, `:${hubNow - 8_000}:$1`));
    const lenient = await watcher('west', keys, { ttlMs: 9_000 });
    await lenient.watcher.readAll();
    const [member] = lenient.registry.foreignMembers('ns', 'env');
    expect(member?.ageMs).toBeGreaterThanOrEqual(8_000);
    expect(member?.ageMs).toBeLessThan(8_500);
    const strict = await watcher('west', keys, { ttlMs: 5_000 });
    await strict.watcher.readAll();
    expect(strict.registry.foreignMembers('ns', 'env')).toEqual([]);
  });

  it('skips records that fail the schema, name another cluster or sit at another field, and keeps the rest', async () => {
    const keys = freshKeys();
    const raw = connection();
    await reporter('east', keys, () => [record('good')]).report();
    const json = (memberPool: string, overrides: Record<string, unknown> = {}): string =>
      JSON.stringify({ clusterId: 'east', ...record(memberPool), ...overrides });
    await raw.hset(keys.records('east'), {
      garbage: '{not json',
      'ns/env/negative': json('negative', { idle: -5 }),
      'ns/env/impostor': json('impostor', { clusterId: 'north' }),
      'ns/env/shadow': json('good', { idle: 99 }),
    });
    const { registry, watcher: w } = await watcher('west', keys);
    // The watcher's own first read (started, not awaited, by start()) counts what it skips too: let it finish.
    await w.readAll();
    const before = w.invalidEntries;
    const fresh = await watcher('west', keys);
    await fresh.watcher.readAll();
    expect(fresh.registry.foreignMembers('ns', 'env').map((m) => [m.memberPool, m.idle])).toEqual([['good', 1]]);
    expect(fresh.watcher.invalidEntries).toBe(4);
    expect(registry.foreignMembers('ns', 'env').map((m) => m.memberPool)).toEqual(['good']);
    expect(w.invalidEntries).toBe(before);
  });

  it('costs one script call per cluster and interval while nothing changes: no record written, no hint, nothing read', async () => {
    const keys = freshKeys();
    const many = Array.from({ length: 200 }, (_, i) => record(`p${i}`));
    const east = reporter('east', keys, () => many);
    await east.report();
    const { registry, watcher: w } = await watcher('west', keys);
    await w.readAll();
    expect(registry.foreignMembers('ns', 'env')).toHaveLength(200);
    const before = await redisCommandStats(connection());
    await east.report();
    await w.readAll();
    const calls = await callsSince(before);
    expect(calls.get('evalsha')).toBe(2);
    // The reporter renews its directory entry (one HSET) and TTLs; the watcher reads the directory (one HGETALL).
    const expected = { hset: 1, hdel: 0, zadd: 0, publish: 0, hgetall: 1, hmget: 0, zrangebyscore: 0, get: 0 };
    for (const [command, n] of Object.entries(expected)) expect(calls.get(command) ?? 0, command).toBe(n);
  });

  it('sends and reads only the records that changed, and drops the ones a cluster stopped reporting', async () => {
    const keys = freshKeys();
    let many = Array.from({ length: 200 }, (_, i) => record(`p${i}`));
    const east = reporter('east', keys, () => many);
    await east.report();
    const { registry, watcher: w } = await watcher('west', keys);
    await w.readAll();
    many = [...many.slice(1, 199), record('p199', 7)];
    const before = await redisCommandStats(connection());
    await east.report();
    await w.readAll();
    const calls = await callsSince(before);
    expect(calls.get('hgetall')).toBe(1); // the directory; the records hash is not read whole
    expect(calls.get('hmget')).toBe(1);
    const seen = await w.readCluster('east');
    expect(seen).toBe(199);
    const members = registry.foreignMembers('ns', 'env');
    expect(members.find((m) => m.memberPool === 'p199')?.idle).toBe(7);
    expect(members.find((m) => m.memberPool === 'p0')).toBeUndefined();
    expect(members).toHaveLength(199);
  });

  it('writes everything again at its next report when the hub lost its keys, and a watcher keeps what it held until then', async () => {
    const keys = freshKeys();
    const east = reporter('east', keys, () => [record('a', 3)]);
    await east.report();
    const { registry, watcher: w } = await watcher('west', keys);
    await w.readAll();
    const raw = connection();
    await raw.del(keys.records('east'), keys.changes('east'), keys.directory);
    await w.readAll();
    expect(registry.foreignMembers('ns', 'env').map((m) => m.idle)).toEqual([3]);
    await east.report();
    expect(await raw.hlen(keys.records('east'))).toBe(1);
    await w.readAll();
    expect(registry.foreignMembers('ns', 'env')).toMatchObject([{ memberPool: 'a', idle: 3 }]);
    expect(registry.foreignMembers('ns', 'env')[0]?.ageMs).toBeLessThan(1_000);
  });

  it('goes on with a delta after a reporter was late past its TTL, and puts its records back once it reports again', async () => {
    const keys = freshKeys();
    const east = reporter('east', keys, () => [record('a', 3)], 300);
    await east.report();
    const { registry, watcher: w } = await watcher('west', keys, { ttlMs: 300 });
    await w.readAll();
    expect(registry.foreignMembers('ns', 'env')).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 400));
    await w.readAll();
    expect(registry.foreignMembers('ns', 'env')).toEqual([]);
    const before = await redisCommandStats(connection());
    await east.report();
    await w.readAll();
    const calls = await callsSince(before);
    expect(calls.get('del') ?? 0).toBe(0); // no full write
    expect(calls.get('hgetall')).toBe(1); // the directory only: the records are not read again
    expect(registry.foreignMembers('ns', 'env')).toMatchObject([{ memberPool: 'a', idle: 3 }]);
  });

  it('reads a whole cluster again when its change log is gone, and a delta when only some hints were missed', async () => {
    const keys = freshKeys();
    let idle = 1;
    const east = reporter('east', keys, () => [record('a', idle), record('b')]);
    await east.report();
    const { registry, watcher: w } = await watcher('west', keys);
    await w.readAll();
    idle = 2;
    await east.report();
    idle = 3;
    await east.report();
    await w.readAll();
    expect(registry.foreignMembers('ns', 'env').map((m) => m.idle)).toEqual([3, 1]);
    await connection().del(keys.changes('east'));
    idle = 4;
    await east.report();
    idle = 5;
    await east.report();
    await w.readAll();
    expect(registry.foreignMembers('ns', 'env').map((m) => m.idle)).toEqual([5, 1]);
  });

  it("takes a later version over the record it holds even when its age says otherwise (reports within the clocks' jitter)", async () => {
    const keys = freshKeys();
    let idle = 1;
    const east = reporter('east', keys, () => [record('a', idle)]);
    await east.report();
    // This process's clock steps back 50 ms at every reading: each later read looks older than the one before.
    let local = 10_000_000;
    const { registry, watcher: w } = await watcher('west', keys, { ttlMs: 600_000, now: () => (local -= 50) });
    await w.readAll();
    expect(registry.foreignMembers('ns', 'env').map((m) => m.idle)).toEqual([1]);
    for (idle = 2; idle <= 4; idle++) {
      await east.report();
      await w.readAll();
      expect(registry.foreignMembers('ns', 'env').map((m) => m.idle)).toEqual([idle]);
    }
  });

  it('takes over from another writer of the same cluster id (a paused leader) with a full write, never a mixed view', async () => {
    const keys = freshKeys();
    const old = reporter('east', keys, () => [record('a', 1), record('stale', 1)]);
    const leader = reporter('east', keys, () => [record('a', 2)]);
    await old.report();
    await leader.report();
    await old.report();
    await leader.report();
    const { registry, watcher: w } = await watcher('west', keys);
    await w.readAll();
    expect(registry.foreignMembers('ns', 'env').map((m) => [m.memberPool, m.idle])).toEqual([['a', 2]]);
  });
});
