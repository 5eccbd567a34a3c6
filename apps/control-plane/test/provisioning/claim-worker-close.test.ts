// ClaimWorker.close on a real Redis: the drain waits for every batch the
// worker holds, including one BullMQ hands it after close() was called (the
// next job a completion fetched while close() came in), rather than only
// those under way at that instant; such a batch is recorded completed, not
// left active for another replica's stalled check.
import type { BatchJob, ClaimOutcome } from '@warmpool/api';
import { sleep, startRedis, type TestRedis } from '@warmpool/harness';
import { silentLogger } from '@warmpool/runtime';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchClaimer, BatchJobHandle } from '../../src/provisioning/batch-claimer.js';
import { ClaimWorker } from '../../src/provisioning/claim-worker.js';
import { ProvisioningMetrics } from '../../src/provisioning/metrics.js';
import { RedisClose } from '../../src/provisioning/redis-close.js';

const PREFIX = 'test:bull';
const REDIS_TIMEOUT_MS = 500;
/** Longer than the Redis timeout, well within the drain. */
const SECOND_BATCH_MS = 1_000;
/**
 * How long Redis is kept busy (a script) while the first batch's completion, which fetches the second, waits: well
 * within the Redis timeout (a fetch answered later than that is Redis not answering, and is cut).
 */
const BUSY_MS = 200;

function batch(claimRef: string): BatchJob {
  return {
    replyTo: 'replica-1',
    namespace: 'ns',
    warmPool: 'py',
    key: { template: 'img', net: 'none', size: 'small' },
    deadline: Date.now() + 30_000,
    claims: [{ claimRef, ttlSeconds: 60, door: 'http', owner: '0123456789abcdef0123456789abcdef', generated: false }],
  };
}

/** Keeps Redis busy for `ms` (a script spinning on TIME): every command sent meanwhile waits behind it. */
function busy(redis: Redis, ms: number): Promise<unknown> {
  return redis.eval(
    `local t = redis.call('TIME'); local start = t[1] * 1000000 + t[2]
     repeat local n = redis.call('TIME') until n[1] * 1000000 + n[2] - start > tonumber(ARGV[1])`,
    0,
    String(ms * 1000),
  );
}

describe('ClaimWorker.close (real Redis)', () => {
  let server: TestRedis;
  let redis: Redis;

  beforeAll(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
  });

  afterAll(async () => {
    redis.disconnect();
    await server.stop();
  });

  it('drains a batch BullMQ hands the worker after close() was called, and records it completed', async () => {
    const queue = new Queue<BatchJob>('claims', { connection: { url: server.url }, prefix: PREFIX });
    let closing: Promise<void> | undefined;
    /** Each batch as it starts, and the close. */
    const started: string[] = [];
    const ended: string[] = [];
    const serve = async (job: BatchJobHandle, emit: (outcome: ClaimOutcome) => void): Promise<ClaimOutcome[]> => {
      const claimRef = job.data.claims[0]?.claimRef ?? '';
      started.push(claimRef);
      if (claimRef === 'second') await sleep(SECOND_BATCH_MS);
      const outcome: ClaimOutcome = {
        ok: false,
        claimRef,
        reason: 'Unavailable',
        message: 'scripted',
        retryAfterSeconds: 1,
      };
      emit(outcome);
      ended.push(claimRef);
      if (claimRef === 'first') {
        // The first batch's completion (which fetches the next job, 'second') waits behind a busy Redis: a SIGTERM
        // lands while it is on its way, as it may on any loaded replica within one round trip.
        void busy(redis, BUSY_MS);
        setTimeout(() => {
          const close = new RedisClose({ timeoutMs: REDIS_TIMEOUT_MS, answering: () => true, logger: silentLogger });
          started.push('close()');
          closing = worker.close(close);
        }, BUSY_MS / 4);
      }
      return [outcome];
    };
    const worker = new ClaimWorker({
      queueName: 'claims',
      prefix: PREFIX,
      connection: { url: server.url, maxRetriesPerRequest: null },
      claimer: { serve } as unknown as BatchClaimer,
      send: () => Promise.resolve(),
      concurrency: 1,
      lockDurationMs: 5_000,
      stalledIntervalMs: 5_000,
      drainMs: 5_000,
      metrics: new ProvisioningMetrics(new Registry(), {
        jobCounts: () => Promise.resolve({ waiting: 0, active: 0 }),
        recovering: () => Promise.resolve(false),
      }),
      logger: silentLogger,
    });
    try {
      const first = await queue.add('batch', batch('first'));
      const second = await queue.add('batch', batch('second'));
      worker.start();
      while (closing === undefined) await sleep(10);
      await closing;

      // The second batch was taken after close() was called: it was still served to its end and recorded.
      expect(started).toEqual(['first', 'close()', 'second']);
      expect(ended).toEqual(['first', 'second']);
      expect(await queue.getJobState(first.id ?? '')).toBe('completed');
      expect(await queue.getJobState(second.id ?? '')).toBe('completed');
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });
});
