// The dispatch side of the claim queue (BullMQ's Queue, as its Worker is on
// the other side): each closed batch becomes one job, and its callers wait
// here until the worker's reply comes back on this replica's reply list, or
// until the claim timeout answers them Timeout. A reply that arrives after
// its callers gave up releases the sandboxes nobody can come back for (those
// whose claimRef the front door generated).
import { randomBytes } from 'node:crypto';
import type { BatchJob, BatchReply, ClaimOutcome } from '@warmpool/api';
import type { Batch } from '@warmpool/batcher';
import { messageOf, type Logger } from '@warmpool/runtime';
import type { Queue } from 'bullmq';
import { ClaimFailure, ownerMark, type ClaimGrant, type ClaimOwner } from './claim-service.js';
import { epochNowMs, type ProvisioningMetrics } from './metrics.js';
import type { PendingClaim, Provisioner } from './provisioner.js';

export interface ClaimDispatcherOptions {
  queue: Queue<BatchJob>;
  /** This replica (replies come back to its list). */
  replica: string;
  claimTimeoutMs: number;
  metrics: ProvisioningMetrics;
  /** Releases a served sandbox nobody will take (best effort: its node reaps it at its deadline). */
  releaseUnanswered(grant: ClaimGrant, why: string): void;
  logger: Logger;
}

/** Callers of one job, waiting for their outcomes. */
interface Waiting {
  readonly items: readonly PendingClaim[];
  /** Per item: answered already. */
  readonly answered: boolean[];
  unanswered: number;
  readonly timer: NodeJS.Timeout;
}

export class ClaimDispatcher {
  readonly #options: ClaimDispatcherOptions;
  readonly #waiting = new Map<string, Waiting>();
  /**
   * Jobs whose callers were answered without them (some Timeout, or all Unavailable when the add failed: an add that
   * timed out may still run): a late outcome releases what nobody can come back for.
   */
  readonly #abandoned = new Map<string, { items: readonly PendingClaim[]; answered: readonly boolean[] }>();
  /** Job ids stay unique across restarts of a replica with the same name: BullMQ ignores an add whose id it holds. */
  readonly #jobIdPrefix: string;
  #sequence = 0;

  constructor(options: ClaimDispatcherOptions) {
    this.#options = options;
    this.#jobIdPrefix = `${options.replica}-${randomBytes(4).toString('hex')}`;
  }

  /**
   * Queues one closed batch of a pool (one job, or more where one claimRef
   * comes from different front doors or owners: within a job a claimRef has
   * one owner); its callers are answered by onReply or the timeout.
   */
  readonly dispatch = async (provisioner: Provisioner, batch: Batch<PendingClaim>): Promise<void> => {
    this.#options.metrics.batch(batch.items.length, batch.windowMs);
    await Promise.all(oneOwnerPerClaimRef(batch.items).map((items) => this.#queue(provisioner, items)));
  };

  async #queue(provisioner: Provisioner, items: readonly PendingClaim[]): Promise<void> {
    const { claimTimeoutMs } = this.#options;
    const jobId = `${this.#jobIdPrefix}-${++this.#sequence}`;
    const data: BatchJob = {
      replyTo: this.#options.replica,
      namespace: provisioner.namespace,
      warmPool: provisioner.name,
      key: provisioner.key,
      deadline: Date.now() + claimTimeoutMs,
      queuedAt: epochNowMs(),
      claims: items.map(({ order }) => ({
        claimRef: order.claimRef,
        ttlSeconds: order.ttlSeconds,
        door: order.owner.door,
        owner: ownerMark(order.owner),
        generated: order.claimRefGenerated === true,
      })),
    };
    const answered = items.map(() => false);
    const timer = setTimeout(() => this.#timeOut(jobId, items, answered), claimTimeoutMs);
    this.#waiting.set(jobId, { items, answered, unanswered: items.length, timer });
    try {
      await this.#options.queue.add('batch', data, {
        jobId,
        removeOnComplete: true,
        removeOnFail: { age: 3_600, count: 1_000 },
        attempts: 2,
        backoff: { type: 'fixed', delay: 50 },
      });
    } catch (err) {
      if (!this.#waiting.delete(jobId)) return;
      clearTimeout(timer);
      // An add that timed out may still run (Redis reads it once it answers again): its late reply releases what it
      // served nobody, as a timed-out job's does.
      this.#abandon(jobId, items, answered);
      this.#options.logger.warn('could not queue a claim batch', { jobId, claims: items.length, err });
      const failure = new ClaimFailure('Unavailable', `Redis is not reachable: ${messageOf(err)}`, {
        retryAfterSeconds: 1,
        cause: err,
      });
      for (const item of items) item.reject(failure);
    }
  }

  /** Some outcomes of a job this replica queued (a job run twice may answer a claim twice: the first counts). */
  readonly onReply = (reply: BatchReply): void => {
    const pending = this.#waiting.get(reply.jobId);
    if (pending === undefined) {
      this.#lateReply(reply);
      return;
    }
    for (const outcome of reply.outcomes) {
      const item = pending.items[outcome.index];
      if (item === undefined || pending.answered[outcome.index] === true) continue;
      pending.answered[outcome.index] = true;
      pending.unanswered--;
      answer(item, outcome);
    }
    if (pending.unanswered === 0) {
      this.#waiting.delete(reply.jobId);
      clearTimeout(pending.timer);
    }
  };

  close(): void {
    for (const [, pending] of this.#waiting) clearTimeout(pending.timer);
  }

  #timeOut(jobId: string, items: readonly PendingClaim[], answered: readonly boolean[]): void {
    if (!this.#waiting.delete(jobId)) return;
    const { claimTimeoutMs } = this.#options;
    this.#abandon(jobId, items, answered);
    items.forEach((item, i) => {
      if (answered[i] !== true) item.reject(new ClaimFailure('Timeout', `no answer within ${claimTimeoutMs} ms`));
    });
  }

  /** Remembers a job whose callers are answered without it, for a while: see #lateReply. */
  #abandon(jobId: string, items: readonly PendingClaim[], answered: readonly boolean[]): void {
    this.#abandoned.set(jobId, { items, answered: [...answered] });
    setTimeout(() => this.#abandoned.delete(jobId), this.#options.claimTimeoutMs * 3).unref();
  }

  #lateReply(reply: BatchReply): void {
    const late = this.#abandoned.get(reply.jobId);
    if (late === undefined) return; // every caller of that job has its answer
    for (const outcome of reply.outcomes) {
      const item = late.items[outcome.index];
      if (item === undefined || late.answered[outcome.index] === true) continue;
      if (outcome.ok && outcome.fresh === true && item.order.claimRefGenerated === true)
        this.#options.releaseUnanswered(outcome.grant, 'answered after the caller timed out');
    }
  }
}

function answer(item: PendingClaim, outcome: ClaimOutcome): void {
  if (outcome.ok) {
    item.resolve(outcome.fresh === true ? { ...outcome.grant, fresh: true } : outcome.grant);
    return;
  }
  const retry = outcome.retryAfterSeconds !== undefined ? { retryAfterSeconds: outcome.retryAfterSeconds } : {};
  item.reject(new ClaimFailure(outcome.reason, outcome.message, retry));
}

/** The batch's claims in groups where each claimRef has one front door and one owner (most batches: one group). */
function oneOwnerPerClaimRef(items: readonly PendingClaim[]): Array<readonly PendingClaim[]> {
  const first = items[0]?.order.owner;
  if (first === undefined || items.every(({ order }) => sameOwner(order.owner, first))) return [items];
  const groups: Array<{ items: PendingClaim[]; owners: Map<string, string> }> = [];
  for (const item of items) {
    const owner = `${item.order.owner.door}/${ownerMark(item.order.owner)}`;
    let group = groups.find((g) => (g.owners.get(item.order.claimRef) ?? owner) === owner);
    if (group === undefined) {
      group = { items: [], owners: new Map() };
      groups.push(group);
    }
    group.items.push(item);
    group.owners.set(item.order.claimRef, owner);
  }
  return groups.map((g) => g.items);
}

function sameOwner(a: ClaimOwner, b: ClaimOwner): boolean {
  return a.door === b.door && ownerMark(a) === ownerMark(b);
}
