// Writing the pools' statuses behind the reconcile's back: a run hands over
// its would-be statuses and never waits for the apiserver to take them (which
// takes seconds while a fan-out's 1 000 inventory writes load it), so a push
// is never held up by a status patch.
//
// Per term (StatusLane): only the latest batch is kept, and one loop writes
// batches until none is left; the loop stops when the term's signal aborts,
// and a leader past its renew deadline (mayWrite() false) writes nothing.
// Across terms (PoolStatusQueue): what we last wrote to each pool and the
// versions our writes left (OwnWrites), so a cache that has not caught up
// with our own writes is not mistaken for a difference.
import { SandboxWarmPoolType, type SandboxWarmPool, type SandboxWarmPoolStatus } from '@warmpool/api';
import type { Logger } from '@warmpool/runtime';
import { OwnWrites, type Recalled } from '../own-writes.js';
import type { WarmPoolMetrics } from './metrics.js';
import type { EventRecorder } from './events.js';
import { forEachLimited } from './limiter.js';
import type { PoolStatusWriter } from './status-writer.js';
import { statusSig, transitionEvents, withTransitionTimes, type PoolStatusPlan } from './status.js';

/**
 * What one run wants the pools' statuses to be (without transition times: they are set against what is current when
 * written).
 */
export interface StatusBatch {
  statuses: PoolStatusPlan[];
  now: number;
  /** Compare every status afresh (the periodic resync), not only those that changed since they were last compared. */
  full?: boolean;
}

export interface PoolStatusQueueOptions {
  writer: PoolStatusWriter;
  events: EventRecorder;
  metrics: WarmPoolMetrics;
  logger: Logger;
  /** Status writes in flight at once. */
  concurrency: number;
  /** Like pushes: false (past the renew deadline) and nothing is written. */
  mayWrite(): boolean;
}

/** What we last wrote to a pool's status. */
interface Written {
  /** As stored: what the schema could hold of `full`. */
  status: SandboxWarmPoolStatus;
  /** As computed, conditions included even where the schema holds none: transition times and Events follow it. */
  full: SandboxWarmPoolStatus;
}

/** A pool's status to write. */
interface StatusWrite {
  /** As the write takes it: at the version `at`. */
  pool: SandboxWarmPool;
  uid: string;
  /** The version the write is pinned to. */
  at: string | undefined;
  /** What transition events are judged against. */
  previous: SandboxWarmPoolStatus | undefined;
  /** As computed, with transition times. */
  next: SandboxWarmPoolStatus;
  /** What the schema holds of `next`: what is written. */
  stored: SandboxWarmPoolStatus;
}

/** A status found needing no write, and what it was compared with: the same again need none either. */
interface Settled {
  status: SandboxWarmPoolStatus;
  rv: string | undefined;
  /** The write it was compared with (by identity), when the cache had not caught up with it. */
  last: Written | undefined;
  at: string | undefined;
}

export class PoolStatusQueue {
  readonly #options: PoolStatusQueueOptions;
  readonly #written = new OwnWrites<Written>();
  /**
   * Per pool uid: the would-be status (the object a run handed over) last found equal to the current one. A run keeps
   * a pool's status object while nothing it depends on moved (StatusMemo), so most pools are skipped without a
   * comparison. Without a condition changing, the transition times come from the current status: the verdict does
   * not depend on the batch's time.
   */
  #settled = new Map<string, Settled>();

  constructor(options: PoolStatusQueueOptions) {
    this.#options = options;
  }

  /** A term's lane: it writes only while `signal` (the term's) is not aborted. */
  lane(signal: AbortSignal): StatusLane {
    return new StatusLane(signal, (batch) => this.#write(batch, signal));
  }

  /** Writes each status of the batch that differs from the pool's current one, then emits its transition events. */
  async #write(batch: StatusBatch, signal: AbortSignal): Promise<void> {
    const writes = this.#differing(batch);
    await forEachLimited(writes, this.#options.concurrency, (write) => this.#writeOne(write, signal));
  }

  /**
   * The batch's statuses that differ from their pools' current ones, as writes. Settles the rest (the next batch skips
   * them while nothing they were compared with moved) and forgets pools no longer in the batch.
   */
  #differing(batch: StatusBatch): StatusWrite[] {
    const { writer } = this.#options;
    const live = new Set<string>();
    const writes: StatusWrite[] = [];
    const settled = new Map<string, Settled>();
    for (const { plan, status } of batch.statuses) {
      const pool = plan.pool;
      const uid = pool.metadata?.uid ?? plan.ref;
      live.add(uid);
      const rv = pool.metadata?.resourceVersion;
      // While the cache shows a version our own writes passed through, the pool is where our last write left it.
      const memory: Recalled<Written> | undefined = this.#written.recall(uid, rv);
      const before = batch.full === true ? undefined : this.#settled.get(uid);
      if (
        before !== undefined &&
        before.status === status &&
        before.rv === rv &&
        before.last === memory?.last &&
        before.at === memory?.at
      ) {
        settled.set(uid, before);
        continue;
      }
      const current = memory !== undefined ? memory.last.status : pool.status;
      const previous = memory !== undefined ? memory.last.full : pool.status;
      // The version the write is pinned to: the one our last write left when the cache has not caught up with it yet
      // (every write since the cache's version was pinned to the one before it, so nothing but the status moved).
      const at = memory !== undefined ? memory.at : rv;
      // Refused at this version already: the pool moved on (or was replaced by a namesake), and the cache has yet to
      // show how. Not settled: the run after the cache moves compares it again.
      if (this.#written.refusedAt(uid, at)) continue;
      const next = withTransitionTimes(status, previous, batch.now);
      // Compared as it would be stored: a schema without conditions must not make every run a write.
      const stored = writer.fit?.(next) ?? next;
      // Nothing the schema holds (or no status at all, where the apiserver refuses even `{}`): nothing to write.
      if (Object.keys(stored).length === 0 || statusSig(stored) === statusSig(projectLike(current, stored))) {
        settled.set(uid, { status, rv, last: memory?.last, at: memory?.at });
        continue;
      }
      writes.push({ pool: at === rv ? pool : withVersion(pool, at), uid, at, previous, next, stored });
    }
    this.#settled = settled;
    this.#written.retain(live);
    return writes;
  }

  /** One status write, remembered when it lands (with its transition events), and counted whatever it meets. */
  async #writeOne(write: StatusWrite, signal: AbortSignal): Promise<void> {
    const { metrics, logger, writer, events } = this.#options;
    // Like pushes: a leader past its renew deadline writes nothing (its term is about to end).
    if (signal.aborted || !this.#options.mayWrite()) return;
    const pool = `${write.pool.metadata?.namespace}/${write.pool.metadata?.name}`;
    try {
      const result = await writer.write(write.pool, write.stored, signal);
      if (result.outcome !== 'written') {
        // Gone, or no longer at the version the status was computed from (changed, or deleted and replaced by a
        // namesake): nothing was written, and the run after the cache catches up computes again.
        metrics.statusWrite(result.outcome === 'gone' ? 'gone' : 'conflict');
        // What we wrote before still tells a lagging cache's versions apart, so a moved pool keeps it.
        if (result.outcome === 'gone') this.#written.forget(write.uid);
        else this.#written.refused(write.uid, write.at);
        logger.debug('pool status not written: the pool is not the one it was computed from', {
          pool,
          resourceVersion: write.at,
          outcome: result.outcome,
        });
        return;
      }
      this.#written.written(write.uid, write.at, result.object.metadata?.resourceVersion, {
        status: write.stored,
        full: write.next,
      });
      metrics.statusWrite('written');
      for (const event of transitionEvents(write.previous, write.next)) {
        events.record(write.pool, SandboxWarmPoolType, event.type, event.reason, event.message);
        metrics.event(event.reason);
      }
    } catch (err) {
      if (signal.aborted) return;
      metrics.statusWrite('error');
      // The next run computes the same difference and tries again.
      logger.warn('cannot write pool status', { pool, err });
    }
  }
}

/** One term's status writing: the latest batch, and the loop that writes it while the term lasts. */
export class StatusLane {
  readonly #signal: AbortSignal;
  readonly #write: (batch: StatusBatch) => Promise<void>;
  /** The latest run's would-be statuses, not yet taken by the loop. */
  #batch: StatusBatch | undefined;
  /** The loop runs. Cleared in the step that finds no batch left, so any batch handed over later starts a new loop. */
  #writing = false;

  constructor(signal: AbortSignal, write: (batch: StatusBatch) => Promise<void>) {
    this.#signal = signal;
    this.#write = write;
  }

  /** Replaces any batch not yet taken; starts the loop unless it runs. */
  submit(batch: StatusBatch): void {
    this.#batch = batch;
    if (this.#writing) return;
    this.#writing = true;
    void (async () => {
      try {
        while (this.#batch !== undefined && !this.#signal.aborted) {
          const next = this.#batch;
          this.#batch = undefined;
          await this.#write(next);
        }
      } finally {
        this.#writing = false;
      }
    })();
  }
}

/** `current` cut down to the fields (and condition types) `next` has: what we own is all we compare. */
function projectLike(
  current: SandboxWarmPoolStatus | undefined,
  next: SandboxWarmPoolStatus,
): SandboxWarmPoolStatus | undefined {
  if (current === undefined) return undefined;
  const out: SandboxWarmPoolStatus = {};
  if ('replicas' in next && current.replicas !== undefined) out.replicas = current.replicas;
  if ('readyReplicas' in next && current.readyReplicas !== undefined) out.readyReplicas = current.readyReplicas;
  if ('selector' in next && current.selector !== undefined) out.selector = current.selector;
  if ('observedGeneration' in next && current.observedGeneration !== undefined)
    out.observedGeneration = current.observedGeneration;
  if (next.conditions !== undefined) {
    const types = new Set(next.conditions.map((c) => c.type));
    out.conditions = (current.conditions ?? []).filter((c) => types.has(c.type));
  }
  return out;
}

/** `pool` as a write pinned to `resourceVersion` takes it. */
function withVersion(pool: SandboxWarmPool, resourceVersion: string | undefined): SandboxWarmPool {
  return { ...pool, metadata: { ...pool.metadata, ...(resourceVersion === undefined ? {} : { resourceVersion }) } };
}
