// The pool autoscaler's claim counts, on a real Redis: every replica counts
// the claims it serves, a flush's worth in one transaction, and the leader
// reads them back by pool, tier and second. A count Redis could not take is
// reported, never thrown into the claim path.
import { eventually, startRedis, type TestRedis } from '@warmpool/harness';
import { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  BUCKET_TTL_SECONDS,
  ClaimCounter,
  FLUSH_MS,
  READ_LAG_SECONDS,
} from '../../../src/controllers/pool-autoscaler/claim-counter.js';

/** Redis's own count of a command's calls (INFO commandstats). */
async function callsOf(redis: Redis, command: string): Promise<number> {
  const info = await redis.info('commandstats');
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
}

describe("the pool autoscaler's claim counts (real Redis)", () => {
  let server: TestRedis;
  let redis: Redis;
  let prefix = 'counts';
  let run = 0;
  const second = 1_900_000_000;
  const pools = [
    { namespace: 'team-a', pool: 'py' },
    { namespace: 'team-b', pool: 'node' },
  ];

  beforeAll(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
  });
  afterEach(() => {
    prefix = `counts-${++run}`;
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  it('writes a burst of claims in one transaction, and reads them back by pool, tier and second', async () => {
    const counter = new ClaimCounter(redis, prefix);
    const transactionsBefore = await callsOf(redis, 'exec');
    for (let i = 0; i < 60; i++) counter.record('team-a', 'py', i % 3 === 0 ? 'cold' : 'warm', second * 1000 + i);
    for (let i = 0; i < 5; i++) counter.record('team-b', 'node', 'warm', (second + 1) * 1000 + i);
    await counter.flush();
    expect((await callsOf(redis, 'exec')) - transactionsBefore).toBe(1);
    const { counts } = await counter.read(pools, second, second + 2);
    expect(counts.map(({ warm, cold }) => ({ warm, cold }))).toEqual([
      { warm: 40, cold: 20 },
      { warm: 5, cold: 0 },
    ]);
  });

  it('writes on its own, without a flush, and each bucket expires', async () => {
    const counter = new ClaimCounter(redis, prefix);
    counter.record('team-a', 'py', 'warm', second * 1000);
    const key = `${prefix}:demand:team-a/py:${second}`;
    await eventually(async () => (await redis.hget(key, 'warm')) === '1', { what: 'the count in Redis' });
    const ttl = await redis.ttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(BUCKET_TTL_SECONDS);
  });

  it('adds to what other replicas counted in the same second', async () => {
    const one = new ClaimCounter(redis, prefix);
    const other = new ClaimCounter(redis, prefix);
    one.record('team-a', 'py', 'warm', second * 1000);
    other.record('team-a', 'py', 'warm', second * 1000 + 500);
    other.record('team-a', 'py', 'cold', second * 1000 + 900);
    await Promise.all([one.flush(), other.flush()]);
    const { counts } = await one.read(pools.slice(0, 1), second, second + 1);
    expect(counts[0]).toMatchObject({ warm: 2, cold: 1 });
  });

  it('reports only the counts a refused command carried, and writes the others', async () => {
    await redis.set(`${prefix}:demand:team-a/py:${second}`, 'not a bucket');
    const lost: number[] = [];
    const counter = new ClaimCounter(redis, prefix, { onLost: (_err, claims) => lost.push(claims) });
    counter.record('team-a', 'py', 'warm', second * 1000);
    counter.record('team-a', 'py', 'cold', second * 1000);
    counter.record('team-b', 'node', 'warm', second * 1000);
    await counter.flush();
    expect(lost).toEqual([2]);
    expect(await redis.hget(`${prefix}:demand:team-b/node:${second}`, 'warm')).toBe('1');
  });

  it('writes a count sent after its second was read to the current second, so the leader still reads it', async () => {
    const now = (second + 10) * 1000 + 300;
    const counter = new ClaimCounter(redis, prefix, { now: () => now });
    counter.record('team-a', 'py', 'warm', second * 1000); // stalled for ten seconds before its flush
    // Read by the leader within this second, maybe before the write lands: moves too.
    counter.record('team-a', 'py', 'cold', (second + 10 - READ_LAG_SECONDS) * 1000);
    counter.record('team-a', 'py', 'cold', (second + 10) * 1000 + 100); // the current second: stays
    await counter.flush();
    const at = async (s: number): Promise<Record<string, string>> => redis.hgetall(`${prefix}:demand:team-a/py:${s}`);
    expect(await at(second)).toEqual({});
    expect(await at(second + 10 - READ_LAG_SECONDS)).toEqual({});
    expect(await at(second + 10)).toEqual({ warm: '1', cold: '2' });
  });

  it('on close, waits for the write already in flight before the connection may go', async () => {
    const admin = new Redis(server.url);
    const counter = new ClaimCounter(redis, prefix);
    counter.record('team-a', 'py', 'warm', second * 1000);
    await admin.call('CLIENT', 'PAUSE', '400', 'WRITE'); // holds the timer's transaction in Redis
    await sleep(FLUSH_MS * 2);
    await counter.close();
    expect(await admin.hgetall(`${prefix}:demand:team-a/py:${second}`)).toEqual({ warm: '1' });
    admin.disconnect();
  });

  it('on close, stops waiting for a Redis that does not answer after its wait', async () => {
    const admin = new Redis(server.url);
    const counter = new ClaimCounter(redis, prefix);
    await admin.call('CLIENT', 'PAUSE', '3000', 'WRITE'); // longer than the wait below
    counter.record('team-a', 'py', 'warm', second * 1000);
    await counter.close(100);
    // close() came back while Redis still held the write (reads go on during a write pause)
    expect(await admin.hgetall(`${prefix}:demand:team-a/py:${second}`)).toEqual({});
    await admin.call('CLIENT', 'UNPAUSE');
    admin.disconnect();
  });

  it('on close, writes what is still gathering', async () => {
    const counter = new ClaimCounter(redis, prefix);
    counter.record('team-a', 'py', 'cold', second * 1000);
    await counter.close();
    expect(await redis.hgetall(`${prefix}:demand:team-a/py:${second}`)).toEqual({ cold: '1' });
  });

  it('reports a claim recorded after close as lost, and writes nothing for it', async () => {
    const lost: number[] = [];
    const counter = new ClaimCounter(redis, prefix, { onLost: (_err, claims) => lost.push(claims) });
    await counter.close();
    counter.record('team-a', 'py', 'warm', second * 1000);
    await counter.flush();
    expect(lost).toEqual([1]);
    expect(await redis.exists(`${prefix}:demand:team-a/py:${second}`)).toBe(0);
  });

  it('reports the counts it could not write, and never throws to the claim path', async () => {
    const down = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    down.on('error', () => undefined);
    const lost: number[] = [];
    const counter = new ClaimCounter(down, prefix, { onLost: (_err, claims) => lost.push(claims) });
    expect(() => {
      counter.record('team-a', 'py', 'warm', second * 1000);
      counter.record('team-a', 'py', 'cold', second * 1000);
    }).not.toThrow();
    await counter.flush();
    expect(lost).toEqual([2]);
    down.disconnect();
  });

  it('keeps a listener that throws out of the claim path and the flush', async () => {
    const down = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    down.on('error', () => undefined);
    const counter = new ClaimCounter(down, prefix, {
      onLost: () => {
        throw new Error('a broken listener');
      },
    });
    counter.record('team-a', 'py', 'warm', second * 1000);
    await expect(counter.flush()).resolves.toBeUndefined();
    await counter.close();
    expect(() => counter.record('team-a', 'py', 'warm', second * 1000)).not.toThrow();
    down.disconnect();
  });
});
