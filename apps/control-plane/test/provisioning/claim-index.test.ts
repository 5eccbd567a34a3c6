// The claim index on a real Redis: reservations written ahead, one job's
// reservation never taken by another while it lives, records found by id and
// by claimRef and expiring with their sandbox; the exactly-once core (a record
// is written only over its job's reservation, an absent key or the same
// sandbox; a lost reservation is reported before any node is asked); a
// changed Redis server puts the index in recovery; each front door is its own
// key space; and the eviction-policy check.
import type { ClaimRecord, TriedNode } from '@warmpool/api';
import { sleep, startRedis, type TestRedis } from '@warmpool/harness';
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ClaimIndex } from '../../src/provisioning/claim-index.js';
import type { ClaimScope } from '../../src/provisioning/claim-service.js';
import { checkEvictionPolicy } from '../../src/provisioning/pipeline.js';

const NODE_A: TriedNode = { node: 'a', address: '127.0.0.1:1', tier: 'warm', at: 1 };
const HTTP: ClaimScope = { namespace: 'ns', door: 'http' };
const CRD: ClaimScope = { namespace: 'ns', door: 'crd' };
const OTHER_NS: ClaimScope = { namespace: 'other', door: 'http' };
const PEER_A: ClaimScope = { namespace: 'ns', door: 'fed', peer: 'peer-a' };
const PEER_B: ClaimScope = { namespace: 'ns', door: 'fed', peer: 'peer-b' };
const DIGEST = '0123456789abcdef0123456789abcdef';

function record(
  claimRef: string,
  id: string,
  deadline = new Date(Date.now() + 60_000).toISOString(),
  scope: ClaimScope = HTTP,
): ClaimRecord {
  return {
    id,
    token: 't',
    deadline,
    ownerAddr: 'h:1',
    node: 'a',
    namespace: scope.namespace,
    warmPool: 'py',
    claimRef,
    tier: 'warm',
    door: scope.door,
    owner: scope.door === 'crd' ? `uid-${claimRef}` : scope.door === 'fed' ? (scope.peer ?? '') : DIGEST,
    ...(scope.peer !== undefined ? { peer: scope.peer } : {}),
  };
}

const at = (scope: ClaimScope, ...claimRefs: string[]) => claimRefs.map((claimRef) => ({ scope, claimRef }));

describe('ClaimIndex (real Redis)', () => {
  let server: TestRedis;
  let redis: Redis;
  let index: ClaimIndex;
  let indexConnection: Redis | undefined;

  /** An index on a connection of its own, made once that connection is ready (the index checks the server then). */
  async function freshIndex(): Promise<{ index: ClaimIndex; connection: Redis }> {
    const connection = new Redis(server.url);
    await new Promise<void>((resolve, reject) => {
      connection.once('ready', resolve);
      connection.once('error', reject);
    });
    return { index: new ClaimIndex(connection, { prefix: 'test:' }), connection };
  }

  /** Scripts Redis has run so far (EVALSHA and EVAL). */
  async function scriptCalls(): Promise<number> {
    const stats = await redis.info('commandstats');
    return [...stats.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
  }

  beforeAll(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });
  afterEach(() => {
    indexConnection?.disconnect();
    indexConnection = undefined;
  });
  beforeEach(async () => {
    await redis.flushall();
    ({ index, connection: indexConnection } = await freshIndex());
    // An empty Redis is a server the index was never written on: it starts in recovery, which a repair sweep ends.
    const recovering = await index.recovering();
    expect(recovering).toBeDefined();
    expect(await index.endRecovery(recovering?.marker ?? '')).toBe(true);
  });

  it('appends claimed (token left out), renewed and released to its event stream, in the order they happened', async () => {
    const events = async (): Promise<unknown[]> =>
      ((await redis.xrange(index.eventsKey, '-', '+')) as Array<[string, string[]]>).map(
        ([, fields]) => JSON.parse(fields[1] ?? 'null') as unknown,
      );
    const first = record('job-1', 'sb_1');
    expect(await index.record(first, '')).toEqual({ ok: true });
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
        door: 'http',
        owner: DIGEST,
      },
    });
    expect(seen[2]).toEqual({ op: 'released', namespace: 'ns', claimRef: 'job-1', id: 'sb_1' });
  });

  it("reserves new claimRefs with the nodes they go to, and tells a job its own reservation from another job's", async () => {
    expect(
      await index.reserve(
        [
          { scope: HTTP, claimRef: 'a', tried: [NODE_A] },
          { scope: HTTP, claimRef: 'b', tried: [] },
        ],
        'job-1',
        60_000,
      ),
    ).toEqual({ states: [{ state: 'new' }, { state: 'new' }], recoveringSince: undefined });
    expect((await index.reserve(at(HTTP, 'a'), 'job-1', 60_000)).states).toEqual([
      { state: 'mine', reservation: { job: 'job-1', tried: [NODE_A] } },
    ]);
    expect((await index.reserve(at(HTTP, 'a'), 'job-2', 60_000)).states).toEqual([
      { state: 'busy', reservation: { job: 'job-1', tried: [NODE_A] } },
    ]);
  });

  it("writes a job's progress into BullMQ's hash of the job with the reservations, where a rerun reads it, and never creates that hash", async () => {
    const queue = new Queue('claims', { connection: { url: server.url }, prefix: 'test:bull' });
    try {
      const job = await queue.add('batch', {});
      const key = `${job.queueQualifiedName}:${job.id ?? ''}`;
      const reserved = { tried: { a: [NODE_A] } };
      await index.reserve([{ scope: HTTP, claimRef: 'a', tried: [NODE_A] }], 'job-1', 60_000, { key, value: reserved });
      expect((await Job.fromId(queue, job.id ?? ''))?.progress).toEqual(reserved);
      const retried = { tried: { a: [NODE_A, { ...NODE_A, node: 'b' }] } };
      await index.noteTried([{ scope: HTTP, claimRef: 'a', tried: retried.tried.a }], 'job-1', 60_000, {
        key,
        value: retried,
      });
      expect((await Job.fromId(queue, job.id ?? ''))?.progress).toEqual(retried);

      await index.reserve(at(HTTP, 'b'), 'job-2', 60_000, { key: 'test:bull:claims:gone', value: reserved });
      expect(await redis.exists('test:bull:claims:gone')).toBe(0);
    } finally {
      await queue.close();
    }
  });

  it('writes the records of one turn in one script, and answers each on its own', async () => {
    await index.reserve(at(HTTP, 'a', 'b'), 'job-1', 60_000);
    await index.reserve(at(HTTP, 'c'), 'job-2', 60_000);
    const scriptsBefore = await scriptCalls();
    const results = await Promise.all([
      index.record(record('a', 'sb_a'), 'job-1'),
      index.record(record('b', 'sb_b'), 'job-1'),
      index.record(record('c', 'sb_c'), 'job-1'),
    ]);
    expect(await scriptCalls()).toBe(scriptsBefore + 1);
    expect(results).toEqual([{ ok: true }, { ok: true }, { ok: false, holder: { job: 'job-2', tried: [] } }]);
    expect(await index.lookup(HTTP, 'sb_b')).toMatchObject({ claimRef: 'b' });
    expect(await index.peek(HTTP, 'c')).toEqual({ job: 'job-2', tried: [] });
  });

  it('answers a served claim to a later reservation, and finds it by id and by claimRef', async () => {
    await index.reserve(at(HTTP, 'a'), 'job-1', 60_000);
    const served = record('a', 'sb_1');
    expect(await index.record(served, 'job-1')).toEqual({ ok: true });
    expect((await index.reserve(at(HTTP, 'a'), 'job-2', 60_000)).states).toEqual([{ state: 'served', record: served }]);
    expect(await index.lookup(HTTP, 'a')).toMatchObject({ id: 'sb_1' });
    expect(await index.lookup(HTTP, 'sb_1')).toMatchObject({ claimRef: 'a' });
    expect(await index.lookup(OTHER_NS, 'sb_1')).toBeUndefined();
  });

  it('lets only the reserving job update or drop its reservation, and takes over from a gone job keeping its nodes', async () => {
    await index.reserve(at(HTTP, 'a'), 'job-1', 60_000);
    const key = index.refKey(HTTP, 'a');
    expect(await index.noteTried([{ scope: HTTP, claimRef: 'a', tried: [NODE_A] }], 'job-2', 60_000)).toEqual(
      new Set([key]),
    );
    expect(await index.peek(HTTP, 'a')).toEqual({ job: 'job-1', tried: [] });
    await index.dropReservations(at(HTTP, 'a'), 'job-2');
    expect(await index.peek(HTTP, 'a')).toBeDefined();
    expect(await index.noteTried([{ scope: HTTP, claimRef: 'a', tried: [NODE_A] }], 'job-1', 60_000)).toEqual(
      new Set(),
    );
    expect(await index.takeOver(HTTP, 'a', { job: 'job-1', tried: [NODE_A] }, 'job-3', 60_000)).toBe(true);
    expect(await index.peek(HTTP, 'a')).toEqual({ job: 'job-3', tried: [NODE_A] });
    expect(await index.takeOver(HTTP, 'a', { job: 'job-1', tried: [NODE_A] }, 'job-4', 60_000)).toBe(false);
    await index.dropReservations(at(HTTP, 'a'), 'job-3');
    expect(await index.peek(HTTP, 'a')).toBeUndefined();
  });

  it('keeps a record a grace period past its deadline (its node decides then), and a renewal moves the expiry', async () => {
    const GRACE_MS = 5 * 60_000;
    await index.record(record('soon', 'sb_2', new Date(Date.now() + 300).toISOString()), '');
    const renewed = new Date(Date.now() + 60_000).toISOString();
    await index.renewed(record('soon', 'sb_2'), renewed);
    await index.record(record('gone', 'sb_3', new Date(Date.now() + 300).toISOString()), '');
    await sleep(600);
    // Past its deadline, still there to be confirmed with its node (which may have renewed it without the index).
    expect(await index.lookup(HTTP, 'gone')).toMatchObject({ id: 'sb_3' });
    const left = await redis.pttl(index.refKey(HTTP, 'gone'));
    expect(left).toBeGreaterThan(GRACE_MS - 1_000);
    expect(left).toBeLessThanOrEqual(GRACE_MS);
    expect(await index.lookup(HTTP, 'sb_2')).toMatchObject({ deadline: renewed });
    expect(await redis.pttl(index.refKey(HTTP, 'soon'))).toBeGreaterThan(GRACE_MS + 55_000);
  });

  it('drops a record only while its claimRef still names that sandbox', async () => {
    await index.record(record('a', 'sb_old'), '');
    // The old sandbox's ref key gone (expired, or lost with Redis), a new one of the same claimRef is recorded.
    await redis.del(index.refKey(HTTP, 'a'));
    expect(await index.record(record('a', 'sb_new'), '')).toEqual({ ok: true });
    await index.drop(record('a', 'sb_old'));
    expect(await index.lookup(HTTP, 'a')).toMatchObject({ id: 'sb_new' });
    expect(await index.lookup(HTTP, 'sb_old')).toBeUndefined();
  });

  describe('exactly once', () => {
    it("refuses a record over another job's reservation, and answers that reservation", async () => {
      await index.reserve([{ scope: HTTP, claimRef: 'a', tried: [NODE_A] }], 'job-1', 60_000);
      expect(await index.record(record('a', 'sb_2'), 'job-2')).toEqual({
        ok: false,
        holder: { job: 'job-1', tried: [NODE_A] },
      });
      // A rebuilt record (job '') is no owner of the reservation either.
      expect(await index.record(record('a', 'sb_2'), '')).toMatchObject({ ok: false, holder: { job: 'job-1' } });
      expect(await index.peek(HTTP, 'a')).toEqual({ job: 'job-1', tried: [NODE_A] });
      expect(await index.lookup(HTTP, 'sb_2')).toBeUndefined();
      // A job whose id begins another's is not that job.
      await index.reserve([{ scope: HTTP, claimRef: 'b', tried: [NODE_A] }], 'job-10', 60_000);
      expect(await index.record(record('b', 'sb_3'), 'job-1')).toMatchObject({ ok: false, holder: { job: 'job-10' } });
    });

    it("refuses a record over another sandbox's record, and answers that record", async () => {
      const first = record('a', 'sb_1');
      await index.reserve(at(HTTP, 'a'), 'job-1', 60_000);
      expect(await index.record(first, 'job-1')).toEqual({ ok: true });
      // The same job run again (a stalled job's second run) served another sandbox: that one is the extra.
      expect(await index.record(record('a', 'sb_2'), 'job-1')).toEqual({ ok: false, holder: first });
      expect(await index.record(record('a', 'sb_2'), 'job-2')).toEqual({ ok: false, holder: first });
      expect(await index.record(record('a', 'sb_2'), '')).toEqual({ ok: false, holder: first });
      expect(await index.lookup(HTTP, 'a')).toMatchObject({ id: 'sb_1' });
      expect(await index.lookup(HTTP, 'sb_2')).toBeUndefined();
    });

    it('records over its own reservation, over an absent key, and over a record of the same sandbox', async () => {
      await index.reserve(at(HTTP, 'mine'), 'job-1', 60_000);
      expect(await index.record(record('mine', 'sb_1'), 'job-1')).toEqual({ ok: true });
      expect(await index.lookup(HTTP, 'mine')).toMatchObject({ id: 'sb_1' });
      // A reservation whose job id JSON and Lua spell differently ('/' escaped or not) is still that job's.
      await index.reserve(at(HTTP, 'slash'), 'job/1', 60_000);
      await index.noteTried([{ scope: HTTP, claimRef: 'slash', tried: [NODE_A] }], 'job/1', 60_000);
      expect(await index.record(record('slash', 'sb_s'), 'job/1')).toEqual({ ok: true });
      expect(await index.record(record('slash', 'sb_t'), 'job/2')).toMatchObject({ ok: false, holder: { id: 'sb_s' } });

      expect(await index.peek(HTTP, 'absent')).toBeUndefined();
      expect(await index.record(record('absent', 'sb_2'), 'job-1')).toEqual({ ok: true });
      expect(await index.record(record('rebuilt', 'sb_3'), '')).toEqual({ ok: true });
      expect(await index.lookup(HTTP, 'sb_2')).toMatchObject({ claimRef: 'absent' });
      expect(await index.lookup(HTTP, 'sb_3')).toMatchObject({ claimRef: 'rebuilt' });

      const later = new Date(Date.now() + 120_000).toISOString();
      expect(await index.record({ ...record('mine', 'sb_1'), deadline: later }, 'job-2')).toEqual({ ok: true });
      expect(await index.record({ ...record('mine', 'sb_1'), deadline: later }, '')).toEqual({ ok: true });
      expect(await index.lookup(HTTP, 'sb_1')).toMatchObject({ claimRef: 'mine', deadline: later });
    });

    it("refuses only the record whose claimRef holds a value it cannot read; the turn's other records are written", async () => {
      await index.reserve(at(HTTP, 'a', 'c'), 'job-1', 60_000);
      // Not a record nor a reservation (written by something else): left as it is, never taken as this job's.
      for (const [claimRef, value] of [
        ['number', '5'],
        ['null', 'null'],
      ] as const)
        await redis.set(index.refKey(HTTP, claimRef), value);

      const results = await Promise.all([
        index.record(record('a', 'sb_a'), 'job-1'),
        index.record(record('number', 'sb_n'), 'job-1'),
        index.record(record('null', 'sb_z'), ''),
        index.record(record('c', 'sb_c'), 'job-1'),
      ]);

      expect(results).toEqual([
        { ok: true },
        { ok: false, holder: undefined },
        { ok: false, holder: undefined },
        { ok: true },
      ]);
      expect(await index.lookup(HTTP, 'sb_a')).toMatchObject({ claimRef: 'a' });
      expect(await index.lookup(HTTP, 'sb_c')).toMatchObject({ claimRef: 'c' });
      expect(await redis.get(index.refKey(HTTP, 'number'))).toBe('5');
      expect(await index.lookup(HTTP, 'sb_n')).toBeUndefined();
    });

    it('reports a reservation lost with Redis (FLUSHALL) before its nodes are asked, and does not write it back', async () => {
      await index.reserve(at(HTTP, 'a', 'b'), 'job-1', 60_000);
      await redis.flushall();
      const lost = await index.noteTried(
        [
          { scope: HTTP, claimRef: 'a', tried: [NODE_A] },
          { scope: HTTP, claimRef: 'b', tried: [NODE_A] },
        ],
        'job-1',
        60_000,
      );
      expect(lost).toEqual(new Set([index.refKey(HTTP, 'a'), index.refKey(HTTP, 'b')]));
      expect(await index.peek(HTTP, 'a')).toBeUndefined();
      expect(await index.peek(HTTP, 'b')).toBeUndefined();
    });

    it('reports only the reservations that are no longer the job’s', async () => {
      await index.reserve(at(HTTP, 'kept', 'taken'), 'job-1', 60_000);
      expect(await index.takeOver(HTTP, 'taken', { job: 'job-1', tried: [] }, 'job-2', 60_000)).toBe(true);
      const lost = await index.noteTried(
        [
          { scope: HTTP, claimRef: 'kept', tried: [NODE_A] },
          { scope: HTTP, claimRef: 'taken', tried: [NODE_A] },
        ],
        'job-1',
        60_000,
      );
      expect(lost).toEqual(new Set([index.refKey(HTTP, 'taken')]));
      expect(await index.peek(HTTP, 'kept')).toEqual({ job: 'job-1', tried: [NODE_A] });
      expect(await index.peek(HTTP, 'taken')).toEqual({ job: 'job-2', tried: [] });
    });
  });

  describe('a changed Redis server', () => {
    it('is not in recovery on the server it was written on', async () => {
      const { index: again, connection } = await freshIndex();
      try {
        expect(await again.recovering()).toBeUndefined();
        expect((await again.reserve(at(HTTP, 'a'), 'job-1', 60_000)).recoveringSince).toBeUndefined();
      } finally {
        connection.disconnect();
      }
    });

    it('puts the index in recovery (another run_id), tells reservations since when, until endRecovery with its marker', async () => {
      await redis.set('test:server', 'another-run-id');
      const before = Date.now();
      const { index: again, connection } = await freshIndex();
      try {
        const recovering = await again.recovering();
        expect(recovering).toBeDefined();
        const since = recovering?.since ?? 0;
        expect(since).toBeGreaterThanOrEqual(before);
        expect(since).toBeLessThanOrEqual(Date.now());
        expect(await again.reserve(at(HTTP, 'a'), 'job-1', 60_000)).toEqual({
          states: [{ state: 'new' }],
          recoveringSince: since,
        });
        // Every index on that Redis sees it, not only the one that noticed.
        expect(await index.recovering()).toEqual(recovering);

        expect(await again.endRecovery('1:not-that-one')).toBe(false);
        expect(await again.recovering()).toEqual(recovering);
        expect(await again.endRecovery(recovering?.marker ?? '')).toBe(true);
        expect(await again.recovering()).toBeUndefined();
        expect((await again.reserve(at(HTTP, 'b'), 'job-1', 60_000)).recoveringSince).toBeUndefined();
      } finally {
        connection.disconnect();
      }
    });

    it('puts the index in recovery when the server key itself is gone', async () => {
      await redis.del('test:server');
      const { index: again, connection } = await freshIndex();
      try {
        expect(await again.recovering()).toBeDefined();
        expect((await again.reserve(at(HTTP, 'a'), 'job-1', 60_000)).recoveringSince).toEqual(expect.any(Number));
      } finally {
        connection.disconnect();
      }
    });
  });

  describe('front doors are separate key spaces', () => {
    it('keeps http and crd claims of the same name apart', async () => {
      const viaHttp = record('same', 'sb_http', undefined, HTTP);
      const viaCrd = record('same', 'sb_crd', undefined, CRD);
      await index.reserve(at(HTTP, 'same'), 'job-http', 60_000);
      // The SandboxClaim of that name reserves its own key, not the HTTP one's.
      expect((await index.reserve(at(CRD, 'same'), 'job-crd', 60_000)).states).toEqual([{ state: 'new' }]);
      expect(await index.record(viaHttp, 'job-http')).toEqual({ ok: true });
      expect(await index.record(viaCrd, 'job-crd')).toEqual({ ok: true });
      expect(await index.lookup(HTTP, 'same')).toMatchObject({ id: 'sb_http', door: 'http' });
      expect(await index.lookup(CRD, 'same')).toMatchObject({ id: 'sb_crd', door: 'crd' });
      // Nor by id: a door never reads another door's sandbox.
      expect(await index.lookup(HTTP, 'sb_crd')).toBeUndefined();
      expect(await index.lookup(CRD, 'sb_http')).toBeUndefined();
      expect(await index.peek(CRD, 'only-http')).toBeUndefined();
      await index.drop(viaHttp);
      expect(await index.lookup(HTTP, 'same')).toBeUndefined();
      expect(await index.lookup(CRD, 'same')).toMatchObject({ id: 'sb_crd' });
    });

    it("keeps one peer's federated claims from another's", async () => {
      const ofA = record('job', 'sb_a', undefined, PEER_A);
      expect(await index.record(ofA, '')).toEqual({ ok: true });
      expect(await index.lookup(PEER_A, 'job')).toMatchObject({ id: 'sb_a', peer: 'peer-a' });
      expect(await index.lookup(PEER_A, 'sb_a')).toMatchObject({ claimRef: 'job' });
      expect(await index.lookup(PEER_B, 'job')).toBeUndefined();
      expect(await index.lookup(PEER_B, 'sb_a')).toBeUndefined();
      expect(await index.lookup(HTTP, 'sb_a')).toBeUndefined();
      expect((await index.reserve(at(PEER_B, 'job'), 'job-b', 60_000)).states).toEqual([{ state: 'new' }]);
      expect(await index.record(record('job', 'sb_b', undefined, PEER_B), 'job-b')).toEqual({ ok: true });
      expect(await index.lookup(PEER_A, 'job')).toMatchObject({ id: 'sb_a' });
      expect(await index.lookup(PEER_B, 'job')).toMatchObject({ id: 'sb_b' });
    });
  });

  it('says when Redis may evict keys (BullMQ loses jobs then)', async () => {
    expect(await checkEvictionPolicy(redis)).toBeUndefined();
    await redis.config('SET', 'maxmemory-policy', 'allkeys-lru');
    expect(await checkEvictionPolicy(redis)).toMatch(/allkeys-lru, not noeviction/);
    await redis.config('SET', 'maxmemory-policy', 'noeviction');
  });
});
