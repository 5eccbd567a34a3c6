// The claim index on a real Redis: reservations written ahead, one job's
// reservation never taken by another while it lives, records found by id and
// by claimRef and expiring with their sandbox; and the eviction-policy check.
import type { ClaimRecord, TriedNode } from '@warmpool/api';
import { sleep, startRedis, type TestRedis } from '@warmpool/harness';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ClaimIndex } from '../src/provisioning/claim-index.js';
import { checkEvictionPolicy } from '../src/provisioning/pipeline.js';

const NODE_A: TriedNode = { node: 'a', address: '127.0.0.1:1', tier: 'warm', at: 1 };

function record(claimRef: string, id: string, deadline = new Date(Date.now() + 60_000).toISOString()): ClaimRecord {
  return {
    id,
    token: 't',
    deadline,
    ownerAddr: 'h:1',
    node: 'a',
    namespace: 'ns',
    warmPool: 'py',
    claimRef,
    tier: 'warm',
  };
}

describe('ClaimIndex (real Redis)', () => {
  let server: TestRedis;
  let redis: Redis;
  let index: ClaimIndex;

  beforeAll(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });
  beforeEach(async () => {
    await redis.flushall();
    index = new ClaimIndex(redis, { prefix: 'test:' });
  });

  it('appends claimed (token left out), renewed and released to its event stream, in the order they happened', async () => {
    const events = async (): Promise<unknown[]> =>
      ((await redis.xrange(index.eventsKey, '-', '+')) as Array<[string, string[]]>).map(
        ([, fields]) => JSON.parse(fields[1] ?? 'null') as unknown,
      );
    const first = record('job-1', 'sb_1');
    await index.record([first]);
    await index.renewed(first, new Date(Date.now() + 120_000).toISOString());
    await index.drop(first);
    const seen = await events();
    expect(seen.map((e) => (e as { op: string }).op)).toEqual(['claimed', 'claimed', 'released']);
    expect(seen[0]).toEqual({
      op: 'claimed',
      record: {
        id: 'sb_1',
        deadline: first.deadline,
        ownerAddr: 'h:1',
        node: 'a',
        namespace: 'ns',
        warmPool: 'py',
        claimRef: 'job-1',
        tier: 'warm',
      },
    });
    expect(seen[2]).toEqual({ op: 'released', namespace: 'ns', claimRef: 'job-1', id: 'sb_1' });
  });

  it("reserves new claimRefs with the nodes they go to, and tells a job its own reservation from another job's", async () => {
    expect(await index.reserve('ns', ['a', 'b'], 'job-1', 60_000, [[NODE_A], []])).toEqual([
      { state: 'new' },
      { state: 'new' },
    ]);
    expect(await index.reserve('ns', ['a'], 'job-1', 60_000)).toEqual([
      { state: 'mine', reservation: { job: 'job-1', tried: [NODE_A] } },
    ]);
    expect(await index.reserve('ns', ['a'], 'job-2', 60_000)).toEqual([
      { state: 'busy', reservation: { job: 'job-1', tried: [NODE_A] } },
    ]);
  });

  it('answers a served claim to a later reservation, and finds it by id and by claimRef', async () => {
    await index.reserve('ns', ['a'], 'job-1', 60_000);
    const served = record('a', 'sb_1');
    await index.record([served]);
    expect(await index.reserve('ns', ['a'], 'job-2', 60_000)).toEqual([{ state: 'served', record: served }]);
    expect(await index.lookup('ns', 'a')).toMatchObject({ id: 'sb_1' });
    expect(await index.lookup('ns', 'sb_1')).toMatchObject({ claimRef: 'a' });
    expect(await index.lookup('other', 'sb_1')).toBeUndefined();
  });

  it('lets only the reserving job update or drop its reservation, and takes over from a gone job keeping its nodes', async () => {
    await index.reserve('ns', ['a'], 'job-1', 60_000);
    await index.noteTried('ns', [{ claimRef: 'a', tried: [NODE_A] }], 'job-2', 60_000);
    expect(await index.peek('ns', 'a')).toEqual({ job: 'job-1', tried: [] });
    await index.dropReservations('ns', ['a'], 'job-2');
    expect(await index.peek('ns', 'a')).toBeDefined();
    await index.noteTried('ns', [{ claimRef: 'a', tried: [NODE_A] }], 'job-1', 60_000);
    expect(await index.takeOver('ns', 'a', { job: 'job-1', tried: [NODE_A] }, 'job-3', 60_000)).toBe(true);
    expect(await index.peek('ns', 'a')).toEqual({ job: 'job-3', tried: [NODE_A] });
    await index.dropReservations('ns', ['a'], 'job-3');
    expect(await index.peek('ns', 'a')).toBeUndefined();
  });

  it('expires a record with its sandbox, and a renewal moves the expiry', async () => {
    await index.record([record('soon', 'sb_2', new Date(Date.now() + 300).toISOString())]);
    const renewed = new Date(Date.now() + 60_000).toISOString();
    await index.renewed(record('soon', 'sb_2'), renewed);
    await index.record([record('gone', 'sb_3', new Date(Date.now() + 300).toISOString())]);
    await sleep(600);
    expect(await index.lookup('ns', 'sb_3')).toBeUndefined();
    expect(await index.lookup('ns', 'gone')).toBeUndefined();
    expect(await index.lookup('ns', 'sb_2')).toMatchObject({ deadline: renewed });
  });

  it('drops a record only while its claimRef still names that sandbox', async () => {
    await index.record([record('a', 'sb_old')]);
    await index.record([record('a', 'sb_new')]);
    await index.drop(record('a', 'sb_old'));
    expect(await index.lookup('ns', 'a')).toMatchObject({ id: 'sb_new' });
    expect(await index.lookup('ns', 'sb_old')).toBeUndefined();
  });

  it('says when Redis may evict keys (BullMQ loses jobs then)', async () => {
    expect(await checkEvictionPolicy(redis)).toBeUndefined();
    await redis.config('SET', 'maxmemory-policy', 'allkeys-lru');
    expect(await checkEvictionPolicy(redis)).toMatch(/allkeys-lru, not noeviction/);
    await redis.config('SET', 'maxmemory-policy', 'noeviction');
  });
});
