// A pool's status write against a real apiserver: a server-side apply of
// /status pinned to the resourceVersion the status was computed from, so it
// lands only on that pool. A status computed from a cache that still holds a
// pool deleted meanwhile never lands on the namesake created after it; the
// status queue counts the refusal, does not try again at that version, and
// writes the namesake's own status once the cache shows it. Its own writes,
// which the cache has not caught up with yet (all of them, or only some),
// never make it refuse itself nor take an older one of them for the pool.
import { SandboxWarmPoolType, type SandboxWarmPool, type SandboxWarmPoolStatus } from '@warmpool/api';
import { startCluster, warmPool, type TestCluster } from '@warmpool/harness';
import { ResourceClient, type PinnedWrite } from '@warmpool/kube';
import { createLogger } from '@warmpool/runtime';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { reborn } from '../../support/namesake.js';
import { WarmPoolMetrics } from '../../../src/controllers/warmpool/metrics.js';
import { PoolStatusQueue, type StatusBatch } from '../../../src/controllers/warmpool/status-queue.js';
import { KubePoolStatusWriter } from '../../../src/controllers/warmpool/status-writer.js';

const NAMESPACE = 'default';
const STATUS: SandboxWarmPoolStatus = { replicas: 4, readyReplicas: 3, selector: 'warmpool.dev/pool=x' };

describe("a pool's status write", () => {
  let cluster: TestCluster;
  let pools: ResourceClient<SandboxWarmPool>;
  let writer: KubePoolStatusWriter;

  beforeAll(async () => {
    cluster = await startCluster({ name: 'pool-status-writer' });
    pools = new ResourceClient<SandboxWarmPool>(cluster.kubeConfig, SandboxWarmPoolType);
    writer = new KubePoolStatusWriter(cluster.kubeConfig);
  });
  afterAll(() => cluster?.stop());

  const create = (name: string): Promise<SandboxWarmPool> => pools.create(warmPool(NAMESPACE, name, 'tpl', 4));
  const stored = (name: string): Promise<SandboxWarmPool> => pools.get({ namespace: NAMESPACE, name });
  const recreate = (name: string): Promise<{ old: SandboxWarmPool; namesake: SandboxWarmPool }> =>
    reborn(pools, warmPool(NAMESPACE, name, 'tpl', 4));

  describe('the writer', () => {
    it('applies the status onto the pool it was computed from', async () => {
      const pool = await create('plain');
      const result = await writer.write(pool, STATUS);
      expect((await stored('plain')).status).toEqual(STATUS);
      expect(result.outcome).toBe('written');
    });

    it('applies nothing onto a namesake created after the pool was deleted', async () => {
      const { old, namesake } = await recreate('reborn');
      const result = await writer.write(old, STATUS);
      const now = await stored('reborn');
      expect(now.metadata.uid).toBe(namesake.metadata.uid);
      expect(now.status).toBeUndefined();
      expect(result.outcome).toBe('moved');
    });

    it('applies nothing over a change it did not see', async () => {
      const stale = await create('changed');
      await pools.patchScale({ namespace: NAMESPACE, name: 'changed' }, 9);
      const result = await writer.write(stale, STATUS);
      expect((await stored('changed')).status).toBeUndefined();
      expect(result.outcome).toBe('moved');
    });

    it('applies nothing once the pool is gone', async () => {
      const gone = await create('gone');
      await pools.delete({ namespace: NAMESPACE, name: 'gone' });
      expect((await writer.write(gone, STATUS)).outcome).toBe('gone');
    });
  });

  describe('the status queue', () => {
    /** One pool's would-be status, as a run hands it over. */
    const item = (pool: SandboxWarmPool, replicas: number): StatusBatch['statuses'][number] => ({
      plan: { kind: 'template-missing', pool, ref: `${NAMESPACE}/${pool.metadata.name}`, template: 'tpl' },
      status: { ...STATUS, replicas },
      unplaced: 0,
    });

    /** A term's status lane over the real writer, counting its requests per pool, its metrics and its log lines. */
    async function lane(name: string): Promise<{
      run(...statuses: StatusBatch['statuses']): Promise<void>;
      requests: (pool: string) => number;
      /** The pool as each of its writes that went through left it, in order. */
      left: (pool: string) => Promise<SandboxWarmPool[]>;
      outcomes: () => Promise<Record<string, number>>;
      lines: string[];
    }> {
      const metrics = new WarmPoolMetrics(new Registry());
      const lines: string[] = [];
      const calls: Array<{
        pool: string;
        replicas: number | undefined;
        done: Promise<PinnedWrite<SandboxWarmPool>>;
      }> = [];
      const statuses = new PoolStatusQueue({
        writer: {
          write: (pool, status, signal) => {
            const done = writer.write(pool, status, signal);
            calls.push({ pool: pool.metadata.name ?? '', replicas: status.replicas, done });
            return done;
          },
        },
        events: { record: () => undefined, close: async () => undefined },
        metrics,
        logger: createLogger('warmpool', { level: 'debug', write: (line) => lines.push(line) }),
        concurrency: 4,
        mayWrite: () => true,
      });
      const term = statuses.lane(new AbortController().signal);
      // A pool whose status changes every run, handed over with the others: a batch's writes all start at once, so
      // once the witness's has started, waiting for every write started is waiting for the whole batch.
      const witness = await create(`${name}-witness`);
      let witnessed = 0;
      return {
        run: async (...items) => {
          const mark = ++witnessed;
          term.submit({ statuses: [...items, item(witness, mark)], now: Date.now() });
          await vi.waitFor(() =>
            expect(calls.some((c) => c.pool === witness.metadata.name && c.replicas === mark)).toBe(true),
          );
          await Promise.all(calls.map((c) => c.done));
          // The lane's loop finishes its turn in the microtasks after the writes.
          await new Promise((resolve) => setImmediate(resolve));
        },
        requests: (pool) => calls.filter((c) => c.pool === pool).length,
        left: async (pool) =>
          (await Promise.all(calls.filter((c) => c.pool === pool).map((c) => c.done))).flatMap((r) =>
            r.outcome === 'written' ? [r.object] : [],
          ),
        outcomes: async () => {
          const metric = await metrics.registry.getSingleMetric('warmpool_controlplane_status_writes_total')?.get();
          return Object.fromEntries((metric?.values ?? []).map((v) => [String(v.labels['outcome']), v.value]));
        },
        lines,
      };
    }

    it('refuses a stale status for a namesake once, then writes the namesake its own', async () => {
      const { old, namesake } = await recreate('queued');
      const q = await lane('queued');
      await q.run(item(old, 4));
      expect((await stored('queued')).status).toBeUndefined();
      expect(q.requests('queued')).toBe(1);
      expect(await q.outcomes()).toMatchObject({ conflict: 1 });
      const records = q.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(records.filter((r) => r['level'] === 'warn' || r['level'] === 'error')).toEqual([]);
      expect(records.find((r) => r['pool'] === `${NAMESPACE}/queued`)).toMatchObject({
        level: 'debug',
        outcome: 'moved',
      });
      // The next runs, on a cache that still shows the deleted pool: not tried again at the version refused.
      await q.run(item(old, 5));
      await q.run(item(old, 6));
      expect(q.requests('queued')).toBe(1);
      expect((await stored('queued')).status).toBeUndefined();
      // The cache shows the namesake: its own status is written.
      await q.run(item(namesake, 7));
      expect((await stored('queued')).status?.replicas).toBe(7);
      expect(q.requests('queued')).toBe(2);
    });

    it('refuses a namesake also when the write is pinned to the version its own last write left', async () => {
      const pool = await create('rewritten');
      const q = await lane('rewritten');
      await q.run(item(pool, 4));
      await pools.delete({ namespace: NAMESPACE, name: 'rewritten' });
      const namesake = await create('rewritten');
      // The cache still shows the pool as it was before the queue's write: the write is pinned to what that write left.
      await q.run(item(pool, 5));
      const now = await stored('rewritten');
      expect(now.metadata.uid).toBe(namesake.metadata.uid);
      expect(now.status).toBeUndefined();
      expect(await q.outcomes()).toMatchObject({ conflict: 1 });
    });

    it('writes again over its own last write while the cache has not caught up with it', async () => {
      const pool = await create('lagging');
      const q = await lane('lagging');
      // Each run hands over the pool as it was created: the cache never shows the queue's own writes.
      await q.run(item(pool, 4));
      await q.run(item(pool, 5));
      await q.run(item(pool, 6));
      expect((await stored('lagging')).status?.replicas).toBe(6);
      expect(q.requests('lagging')).toBe(3);
      expect((await q.outcomes())['conflict'] ?? 0).toBe(0);
    });

    it('knows the pool is where its last write left it when the cache has caught up with an earlier one only', async () => {
      const pool = await create('chained');
      const q = await lane('chained');
      // Two writes before the cache shows either: the second is pinned to the version the first left.
      await q.run(item(pool, 4));
      await q.run(item(pool, 5));
      const [first] = await q.left('chained');
      expect(first?.status?.replicas).toBe(4);
      // The cache shows the first write's pool (replicas 4), while the pool has the second's (5): a run that wants 4
      // back writes it, and one that wants something else writes it over the second write, not refused.
      await q.run(item(first as SandboxWarmPool, 4));
      expect((await stored('chained')).status?.replicas).toBe(4);
      await q.run(item(first as SandboxWarmPool, 6));
      expect((await stored('chained')).status?.replicas).toBe(6);
      expect(q.requests('chained')).toBe(4);
      expect((await q.outcomes())['conflict'] ?? 0).toBe(0);
    });

    // Last: it restarts the apiserver. The versions live in etcd, so what the queue remembers of its own writes holds.
    it('writes over its own last write across an apiserver restart, and still refuses a namesake', async () => {
      const pool = await create('restarted');
      const { old } = await recreate('restarted-old');
      const q = await lane('restarted');
      await q.run(item(pool, 4));
      await cluster.restartApiserver();
      await q.run(item(pool, 5), item(old, 5));
      expect((await stored('restarted')).status?.replicas).toBe(5);
      expect((await stored('restarted-old')).status).toBeUndefined();
      expect(await q.outcomes()).toMatchObject({ conflict: 1 });
    });
  });
});
