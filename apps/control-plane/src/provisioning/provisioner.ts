// One Provisioner per driven SandboxWarmPool: it owns a Batcher and hands
// each closed batch to the dispatcher (one BullMQ job per batch); add()
// answers with that claim's own result.
//
// When to send: while none of this pool's batches is out (sent, some claim
// unanswered) there is nothing to wait for, so the claims go at the end of
// the event-loop turn they arrived in; while one is out they gather in the
// Batcher's window (idle gap, max duration, max items). Batches never wait
// for the previous one's answer: the window bounds how long a claim waits.
import { Batcher, type Batch, type BatcherOptions } from '@warmpool/batcher';
import type { PoolKey } from '@warmpool/api';
import { ClaimFailure, type ClaimOrder, type ServedGrant } from './claim-service.js';

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
  dispatch: BatchDispatch;
}

/** A sent batch until every claim in it is answered. */
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
  #sendScheduled = false;

  constructor(options: ProvisionerOptions) {
    this.namespace = options.namespace;
    this.name = options.name;
    this.#key = options.key;
    this.#dispatch = options.dispatch;
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
      this.#sendIfIdle();
    });
  }

  /** Takes no new claims; resolves when every claim already enqueued has its answer. */
  async stop(): Promise<void> {
    this.#batcher.close();
    await this.#loop;
    await Promise.allSettled([...this.#inFlight]);
  }

  /** With no batch out, what is queued goes once this turn's arrivals are in (they read as one burst). */
  #sendIfIdle(): void {
    if (this.#out > 0 || this.#sendScheduled) return;
    this.#sendScheduled = true;
    setImmediate(() => {
      this.#sendScheduled = false;
      if (this.#out === 0) this.#batcher.flush();
    });
  }

  #answered(claim: QueuedClaim): void {
    if (claim.settled) return;
    claim.settled = true;
    const out = claim.out;
    if (out === undefined || --out.unanswered > 0) return;
    this.#out--;
    if (this.#batcher.size > 0) this.#sendIfIdle();
  }

  async #run(): Promise<void> {
    for (;;) {
      const batch = await this.#batcher.wait();
      if (batch.items.length > 0) {
        const out: OutBatch = { unanswered: 0 };
        for (const claim of batch.items) {
          if (claim.settled) continue;
          claim.out = out;
          out.unanswered++;
        }
        if (out.unanswered > 0) this.#out++;
        const running = this.#dispatch(this, batch).catch(() => undefined);
        this.#inFlight.add(running);
        void running.finally(() => this.#inFlight.delete(running));
      }
      if (this.#batcher.closed && this.#batcher.size === 0) return;
    }
  }
}
