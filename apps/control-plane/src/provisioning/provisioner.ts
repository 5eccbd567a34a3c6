// One Provisioner per driven SandboxWarmPool (after Karpenter's Provisioner):
// it owns a Batcher, waits for enqueued claims, and hands each closed batch to
// the dispatcher (one BullMQ job per batch). add() answers with that claim's
// own result once its batch is done.
//
// Batches are dispatched without waiting for the previous one's answer: the
// window bounds how long a claim waits to be sent, not how many batches are
// out at once.
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

export class Provisioner {
  readonly namespace: string;
  readonly name: string;
  readonly #batcher: Batcher<PendingClaim>;
  readonly #dispatch: BatchDispatch;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #loop: Promise<void>;
  #key: PoolKey;

  constructor(options: ProvisionerOptions) {
    this.namespace = options.namespace;
    this.name = options.name;
    this.#key = options.key;
    this.#dispatch = options.dispatch;
    this.#batcher = new Batcher<PendingClaim>(options.batcher);
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
      this.#batcher.add({ order, addedAt: performance.now(), resolve, reject });
    });
  }

  /** Takes no new claims; resolves when every claim already enqueued has its answer. */
  async stop(): Promise<void> {
    this.#batcher.close();
    await this.#loop;
    await Promise.allSettled([...this.#inFlight]);
  }

  async #run(): Promise<void> {
    for (;;) {
      const batch = await this.#batcher.wait();
      if (batch.items.length > 0) {
        const running = this.#dispatch(this, batch).catch(() => undefined);
        this.#inFlight.add(running);
        void running.finally(() => this.#inFlight.delete(running));
      }
      if (this.#batcher.closed && this.#batcher.size === 0) return;
    }
  }
}
