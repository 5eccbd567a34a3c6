// The worker side of the claim queue: a BullMQ Worker whose handler claims a
// batch on the nodes (BatchClaimer) and sends each outcome back to the
// replica whose callers wait, as soon as it is final (ReplyBatcher).
//
// Closing drains: the worker takes no new batch, serves the ones under way up
// to their deadline (by which each of their callers has had an answer), then
// gives BullMQ the Redis timeout to record them (RedisClose). One BullMQ
// hands in meanwhile (the next job a completion fetched as close() came in)
// is under way too: it is served the same way, not cut. A batch whose
// end went unrecorded is served again by a replica's stalled check, which
// asks the nodes it tried first: nothing is claimed twice.
import { batchProgressSchema, readBatchJob, type BatchJob, type BatchReply } from '@warmpool/api';
import { messageOf, type Logger } from '@warmpool/runtime';
import { Worker, type ConnectionOptions, type Job } from 'bullmq';
import type { BatchClaimer } from './batch-claimer.js';
import type { ProvisioningMetrics } from './metrics.js';
import { ReplyBatcher } from './reply-batcher.js';
import type { RedisClose } from './redis-close.js';
import { settlesWithin } from './within.js';

export interface ClaimWorkerOptions {
  queueName: string;
  prefix: string;
  connection: ConnectionOptions;
  claimer: BatchClaimer;
  /** Delivers a reply to the replica that queued the job. */
  send(replyTo: string, reply: BatchReply): Promise<void>;
  concurrency: number;
  lockDurationMs: number;
  stalledIntervalMs: number;
  /** How long a close waits for the batches under way: their deadline, the claim timeout. */
  drainMs: number;
  metrics: ProvisioningMetrics;
  logger: Logger;
}

export class ClaimWorker {
  readonly #options: ClaimWorkerOptions;
  #worker: Worker<BatchJob> | undefined;
  #closed = false;
  readonly #serving = new Set<Promise<void>>();

  constructor(options: ClaimWorkerOptions) {
    this.#options = options;
  }

  /** Starts taking jobs (once the caches placement reads are filled). */
  start(): void {
    if (this.#closed || this.#worker !== undefined) return;
    const o = this.#options;
    const worker = new Worker<BatchJob>(o.queueName, (job) => this.#serve(job), {
      connection: o.connection,
      prefix: o.prefix,
      concurrency: o.concurrency,
      lockDuration: o.lockDurationMs,
      stalledInterval: o.stalledIntervalMs,
      maxStalledCount: 2,
      drainDelay: 1,
    });
    worker.on('error', (err: Error) => o.logger.debug('claim worker connection error', { err: err.message }));
    worker.on('stalled', (jobId) => {
      o.metrics.stalledJob();
      o.logger.warn(
        'a claim batch job stalled (its worker died or froze): serving it here, asking the nodes it tried first',
        { jobId },
      );
    });
    worker.on('failed', (job, err) =>
      o.logger.warn('claim batch job failed', { jobId: job?.id, attempts: job?.attemptsMade, err: err.message }),
    );
    this.#worker = worker;
  }

  /** Drains (see the top of this file); `redis` bounds what is left of the close once the batches are done. */
  async close(redis: RedisClose): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    if (worker === undefined) return;
    const closing = worker.close();
    const deadline = performance.now() + this.#options.drainMs;
    await redis.closeOrCut('the claim worker', closing, () => worker.disconnect(), {
      drained: () => this.#drained(deadline),
      busy: () => this.#serving.size > 0 && performance.now() < deadline,
    });
  }

  /** Settles once no batch is served (those that started meanwhile included), or at `deadline`. */
  async #drained(deadline: number): Promise<void> {
    while (this.#serving.size > 0) {
      const left = deadline - performance.now();
      if (left <= 0 || !(await settlesWithin(Promise.allSettled([...this.#serving]), left))) return;
    }
  }

  #serve(job: Job<BatchJob>): Promise<void> {
    const serving = this.#handle(job);
    this.#serving.add(serving);
    const done = (): void => void this.#serving.delete(serving);
    serving.then(done, done);
    return serving;
  }

  async #handle(job: Job<BatchJob>): Promise<void> {
    const data = readBatchJob(job.data);
    if (data.queuedAt !== undefined) this.#options.metrics.queued(data.queuedAt);
    const id = job.id ?? '';
    const progress = batchProgressSchema.safeParse(job.progress);
    const answers = new ReplyBatcher(id, data, (reply) => this.#options.send(data.replyTo, reply));
    try {
      await this.#options.claimer.serve(
        {
          id,
          data,
          progress: progress.success ? progress.data : undefined,
          progressKey: `${job.queueQualifiedName}:${id}`,
        },
        (outcome) => answers.add(outcome),
      );
    } catch (err) {
      // Another attempt asks the nodes already tried first; the last one answers Unavailable.
      if (job.attemptsMade + 1 < (job.opts.attempts ?? 1)) throw err;
      this.#options.logger.error('a claim batch failed', { jobId: id, err });
      const message = `the claim batch failed: ${messageOf(err)}`;
      for (const c of data.claims)
        answers.add({ ok: false, claimRef: c.claimRef, reason: 'Unavailable', message, retryAfterSeconds: 1 });
    }
    await answers.flushed();
  }
}
