// One Provisioner per driven SandboxWarmPool: it owns a Batcher and hands
// each batch to the dispatcher (one BullMQ job per batch); add() answers with
// that claim's own result.
//
// When a batch goes:
// - no batch of the pool is out (sent, a claim of it unanswered): after the
//   Batcher's idle gap; idle 0 sends at the end of the event-loop turn the
//   claims arrived in (claims read in one turn are one burst);
// - a batch is out: the claims gather until it is answered, the batch holds
//   max items, or the first of them has waited the max duration. Per-batch
//   costs (the job's Redis round trips) are then shared by every claim that
//   arrived meanwhile, and no claim waits longer than the max duration;
// - the batch out is answered: its callers are free to ask again, and a
//   closed-loop caller does within a round trip. The held claims wait up to
//   the rejoin gap more for as many new claims as that batch answered, and go
//   as soon as that many have come. Without it the returning callers would
//   make a batch of their own behind the held one, and two half-size batches
//   would alternate for as long as the load lasts (each paying the job's
//   per-batch costs). Still no claim waits longer than the max duration.
//   Callers that do not ask again (a burst of one-shot claims, SandboxClaims)
//   would only make the held claims wait the gap, so the hold learns whether
//   they do (rejoin.ts).
import { Batcher, type Batch, type BatcherOptions } from '@warmpool/batcher';
import type { PoolKey } from '@warmpool/api';
import { ClaimFailure, type ClaimOrder, type ServedGrant } from './claim-service.js';
import { Rejoin } from './rejoin.js';

/** A claim waiting in a batch, with the way to answer its caller. */
export interface PendingClaim {
  readonly order: ClaimOrder;
  /** performance.now() when it was added. */
  readonly addedAt: number;
  resolve(grant: ServedGrant): void;
  reject(failure: ClaimFailure): void;
}

/** Runs one closed batch and settles every claim in it (never rejects). */
export type BatchDispatch = (provisioner: Provisioner, batch: Batch<PendingClaim>) => Promise<void>;

export interface ProvisionerOptions {
  namespace: string;
  name: string;
  key: PoolKey;
  batcher?: Partial<BatcherOptions>;
  /** How long held claims wait for the answered batch's callers to ask again (0: they go at once). Default 0. */
  rejoinMs?: number;
  dispatch: BatchDispatch;
}

/** A sent batch, until every claim in it is answered. */
interface OutBatch {
  unanswered: number;
}

interface QueuedClaim extends PendingClaim {
  out: OutBatch | undefined;
  settled: boolean;
}

export class Provisioner {
  readonly namespace: string;
  readonly name: string;
  readonly #batcher: Batcher<QueuedClaim>;
  readonly #dispatch: BatchDispatch;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #loop: Promise<void>;
  #key: PoolKey;
  /** Batches sent with a claim still unanswered. */
  #out = 0;
  #flushScheduled = false;
  /** Set while the loop holds claims back because a batch is out. */
  #endHold: (() => void) | undefined;
  #holdTimer: NodeJS.Timeout | undefined;
  readonly #rejoinMs: number;
  readonly #rejoin: Rejoin;
  /** While the hold waits for callers to rejoin: the size at which the held batch goes (at most max items). */
  #rejoinAt: number | undefined;
  #rejoinTimer: NodeJS.Timeout | undefined;

  constructor(options: ProvisionerOptions) {
    this.namespace = options.namespace;
    this.name = options.name;
    this.#key = options.key;
    this.#dispatch = options.dispatch;
    this.#rejoinMs = options.rejoinMs ?? 0;
    this.#rejoin = new Rejoin(this.#rejoinMs);
    this.#batcher = new Batcher<QueuedClaim>(options.batcher);
    this.#loop = this.#run();
  }

  /** The sandboxd pool key claims of this pool are served from (the template may change it). */
  get key(): PoolKey {
    return this.#key;
  }

  set key(key: PoolKey) {
    this.#key = key;
  }

  /** False once stop() was called: new claims are refused, enqueued ones are still served. */
  get accepting(): boolean {
    return !this.#batcher.closed;
  }

  /** Claims enqueued and not yet handed to a job. */
  get queued(): number {
    return this.#batcher.size;
  }

  /**
   * Enqueues a claim; the promise settles with its own result when its batch is done.
   * Rejects ClaimFailure('PoolNotFound') once stop() was called.
   */
  add(order: ClaimOrder): Promise<ServedGrant> {
    if (this.#batcher.closed)
      return Promise.reject(
        new ClaimFailure('PoolNotFound', `SandboxWarmPool ${this.namespace}/${this.name} is going away`),
      );
    return new Promise<ServedGrant>((resolve, reject) => {
      const claim: QueuedClaim = {
        order,
        addedAt: performance.now(),
        out: undefined,
        settled: false,
        resolve: (grant) => {
          resolve(grant);
          this.#answered(claim);
        },
        reject: (failure) => {
          reject(failure);
          this.#answered(claim);
        },
      };
      this.#batcher.add(claim);
      this.#afterAdd();
    });
  }

  /** Takes no new claims; resolves when every claim already enqueued has its answer. */
  async stop(): Promise<void> {
    this.#batcher.close();
    this.#releaseHold();
    await this.#loop;
    await Promise.allSettled([...this.#inFlight]);
  }

  #afterAdd(): void {
    const { idleMs, maxItems, maxDurationMs } = this.#batcher.options;
    this.#rejoin.added();
    if (this.#endHold === undefined) {
      if (idleMs === 0) this.#flushAtEndOfTurn();
    } else if (this.#batcher.size >= (this.#rejoinAt ?? maxItems)) this.#releaseHold();
    else this.#holdTimer ??= setTimeout(() => this.#releaseHold(), maxDurationMs);
  }

  #flushAtEndOfTurn(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => {
      this.#flushScheduled = false;
      if (this.#endHold === undefined) this.#batcher.flush();
    });
  }

  #answered(claim: QueuedClaim): void {
    if (claim.settled) return;
    claim.settled = true;
    const out = claim.out;
    if (out === undefined) return;
    this.#rejoin.answered();
    if (--out.unanswered > 0) return;
    if (--this.#out === 0) this.#awaitRejoin();
  }

  /**
   * The last batch out is answered: the hold ends once as many claims came as were answered in it (those back
   * already counted), or the rejoin gap passed; at once while callers do not ask again (rejoin.ts).
   */
  #awaitRejoin(): void {
    const { maxItems } = this.#batcher.options;
    const awaited =
      this.#endHold === undefined || this.#rejoinMs === 0
        ? undefined
        : this.#rejoin.begin(maxItems - this.#batcher.size);
    if (awaited === undefined) {
      this.#releaseHold();
      return;
    }
    this.#rejoinAt = this.#batcher.size + awaited;
    if (this.#batcher.size >= this.#rejoinAt) {
      this.#releaseHold();
      return;
    }
    this.#rejoinTimer = setTimeout(() => this.#releaseHold(), this.#rejoinMs);
  }

  /** Resolves at once unless a batch is out; then when the hold ends (see the header). */
  async #hold(): Promise<void> {
    // A full batch is not held: the claims behind it would otherwise wait a max duration per batch ahead of them.
    if (this.#out === 0 || this.#batcher.closed || this.#batcher.size >= this.#batcher.options.maxItems) return;
    await new Promise<void>((resolve) => {
      this.#endHold = resolve;
      if (this.#batcher.size > 0)
        this.#holdTimer = setTimeout(() => this.#releaseHold(), this.#batcher.options.maxDurationMs);
    });
  }

  #releaseHold(): void {
    clearTimeout(this.#holdTimer);
    this.#holdTimer = undefined;
    clearTimeout(this.#rejoinTimer);
    this.#rejoinTimer = undefined;
    this.#rejoinAt = undefined;
    this.#rejoin.end(this.#out === 0);
    const end = this.#endHold;
    this.#endHold = undefined;
    end?.();
  }

  async #run(): Promise<void> {
    for (;;) {
      const held = this.#out > 0;
      await this.#hold();
      if (held) await this.#sendHeld();
      else {
        const batch = await this.#batcher.wait();
        if (batch.items.length > 0) this.#send(batch);
      }
      if (this.#batcher.closed && this.#batcher.size === 0) return;
    }
  }

  /**
   * Claims held back behind an answered batch have waited long enough: every one goes now, without a window, in
   * batches of at most max items (a remainder left for the next hold would start its max duration afresh).
   */
  async #sendHeld(): Promise<void> {
    this.#batcher.flush();
    for (let ready = this.#batcher.size; ready > 0;) {
      const batch = await this.#batcher.wait();
      if (batch.items.length === 0) return;
      ready -= batch.items.length;
      this.#send(batch);
    }
  }

  #send(batch: Batch<QueuedClaim>): void {
    const live = batch.items.filter((claim) => !claim.settled);
    const out: OutBatch = { unanswered: live.length };
    for (const claim of live) claim.out = out;
    if (out.unanswered > 0) this.#out++;
    const running = this.#dispatch(this, batch).catch(() => undefined);
    this.#inFlight.add(running);
    void running.finally(() => this.#inFlight.delete(running));
  }
}
