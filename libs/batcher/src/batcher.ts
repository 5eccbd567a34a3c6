import type { Batch, BatchCloseReason, BatchReceipt } from './batch.js';
import { BatcherClosedError } from './errors.js';
import { resolveBatcherOptions, type BatcherOptions } from './options.js';
import { BatchWindow } from './window.js';

export interface WaitOptions {
  /** Abandons this wait: its promise rejects with `signal.reason`; no item is taken. */
  readonly signal?: AbortSignal;
}

/** The batch items are currently added to; its gate is what their add() returned. */
interface OpenBatch<T> {
  readonly id: number;
  readonly items: T[];
  readonly gate: Promise<BatchReceipt>;
  readonly releaseGate: (receipt: BatchReceipt) => void;
}

/** A batch that takes no more items and waits for a wait() to take it. */
interface ClosedBatch<T> {
  readonly batch: OpenBatch<T>;
  readonly closedBy: BatchCloseReason;
  readonly windowMs: number;
}

interface Waiter<T> {
  readonly resolve: (batch: Batch<T>) => void;
  readonly reject: (reason: unknown) => void;
  detach: () => void;
}

/**
 * Splits a stream of `add(item)` calls into batches, after Karpenter's
 * provisioning batcher: `wait()` opens a window at the first item, every item
 * extends it by `idleMs`, and it closes after `maxDurationMs` at the latest or as
 * soon as it holds `maxItems`.
 *
 * Unlike the original, an item belongs to exactly one batch from the moment
 * `add()` returns, and the gate `add()` returns is that batch's own gate: it
 * resolves when, and only when, that batch is handed over by `wait()`. (In
 * Karpenter, an item enqueued just before a Flush read the gate afterwards and
 * waited for the next batch, and one enqueued just after a Wait returned could be
 * released by a batch that did not contain it.)
 *
 * Single-threaded by construction: every method runs to completion, so there is
 * no lock and no window between "enqueued" and "got the gate".
 */
export class Batcher<T> {
  readonly options: BatcherOptions;
  #open: OpenBatch<T>;
  /** FIFO; non-empty only while no wait() is pending. */
  readonly #closedBatches: ClosedBatch<T>[] = [];
  /** FIFO; the first one owns the window. */
  readonly #waiters: Waiter<T>[] = [];
  /** Set exactly while a wait() is pending and the open batch has items. */
  #window: BatchWindow | undefined;
  #nextBatchId = 1;
  #closed = false;

  constructor(options: Partial<BatcherOptions> = {}) {
    this.options = resolveBatcherOptions(options);
    this.#open = this.#newBatch();
  }

  /** True once close() was called; add() then throws. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Items added and not yet handed over by wait(). */
  get size(): number {
    let size = this.#open.items.length;
    for (const closed of this.#closedBatches) size += closed.batch.items.length;
    return size;
  }

  /**
   * Adds an item to the current batch and returns that batch's gate, which
   * resolves once wait() has handed the batch over. The gate never rejects.
   * @throws BatcherClosedError after close(); the item is not taken.
   */
  add(item: T): Promise<BatchReceipt> {
    if (this.#closed) throw new BatcherClosedError();
    const batch = this.#open;
    batch.items.push(item);
    if (batch.items.length >= this.options.maxItems) this.#closeOpenBatch('maxItems');
    else if (this.#window !== undefined) this.#window.extend();
    else if (this.#waiters.length > 0) this.#openWindow();
    return batch.gate;
  }

  /**
   * Ends the current batch now, whatever its window says, and starts a new one
   * (a new gate) for later adds. A pending wait() resolves with it at once,
   * releasing everyone on its gate; with no wait() pending, the next wait() takes
   * it without opening a window. Does nothing when the current batch is empty.
   * @returns how many items the ended batch holds
   */
  flush(): number {
    const size = this.#open.items.length;
    if (size > 0) this.#closeOpenBatch('flush');
    return size;
  }

  /**
   * Resolves with the next batch: one already closed if there is one, otherwise
   * it waits for a first item, then for the idle gap, the max duration or max
   * items. Concurrent waits are served in call order, one batch each.
   * After close(), it hands over what is still buffered, then empty batches.
   */
  wait(options: WaitOptions = {}): Promise<Batch<T>> {
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const ready = this.#closedBatches.shift() ?? (this.#closed ? this.#closeEmptyBatch() : undefined);
    if (ready !== undefined) return Promise.resolve(this.#handOver(ready));
    return new Promise<Batch<T>>((resolve, reject) => {
      const waiter: Waiter<T> = { resolve, reject, detach: () => {} };
      if (signal !== undefined) {
        const onAbort = (): void => this.#abandon(waiter, signal.reason);
        signal.addEventListener('abort', onAbort, { once: true });
        waiter.detach = () => signal.removeEventListener('abort', onAbort);
      }
      this.#waiters.push(waiter);
      if (this.#waiters.length === 1 && this.#open.items.length > 0) this.#openWindow();
    });
  }

  /**
   * Stops taking items and releases every pending wait(): the first gets what is
   * buffered, the others an empty batch. Items no pending wait() could take stay
   * buffered for later wait() calls, so nothing added is lost. Idempotent.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#open.items.length > 0) this.#closeOpenBatch('close');
    for (let waiter = this.#waiters.shift(); waiter !== undefined; waiter = this.#waiters.shift()) {
      this.#handOverTo(waiter, this.#closeEmptyBatch());
    }
  }

  #newBatch(): OpenBatch<T> {
    let releaseGate: (receipt: BatchReceipt) => void = () => {};
    const gate = new Promise<BatchReceipt>((resolve) => {
      releaseGate = resolve;
    });
    return { id: this.#nextBatchId++, items: [], gate, releaseGate };
  }

  #openWindow(): void {
    const { idleMs, maxDurationMs } = this.options;
    this.#window = new BatchWindow(idleMs, maxDurationMs, (deadline) => this.#closeOpenBatch(deadline));
  }

  #closeOpenBatch(closedBy: BatchCloseReason): void {
    const windowMs = this.#window?.elapsedMs() ?? 0;
    this.#window?.cancel();
    this.#window = undefined;
    this.#closedBatches.push({ batch: this.#open, closedBy, windowMs });
    this.#open = this.#newBatch();
    while (this.#waiters.length > 0) {
      const closed = this.#closedBatches.shift();
      if (closed === undefined) break;
      this.#handOverTo(this.#waiters.shift() as Waiter<T>, closed);
    }
  }

  /** Only once closed: the open batch is then always empty. */
  #closeEmptyBatch(): ClosedBatch<T> {
    const batch = this.#open;
    this.#open = this.#newBatch();
    return { batch, closedBy: 'close', windowMs: 0 };
  }

  #handOverTo(waiter: Waiter<T>, closed: ClosedBatch<T>): void {
    waiter.detach();
    waiter.resolve(this.#handOver(closed));
  }

  /** The single place a gate opens: right as its batch leaves the batcher. */
  #handOver({ batch, closedBy, windowMs }: ClosedBatch<T>): Batch<T> {
    batch.releaseGate({ batchId: batch.id, size: batch.items.length, windowMs, closedBy });
    return { id: batch.id, items: batch.items, windowMs, closedBy };
  }

  #abandon(waiter: Waiter<T>, reason: unknown): void {
    const index = this.#waiters.indexOf(waiter);
    if (index < 0) return;
    this.#waiters.splice(index, 1);
    // The window belongs to the batch, not to the waiter: the next waiter inherits it.
    if (this.#waiters.length === 0 && this.#window !== undefined) {
      this.#window.cancel();
      this.#window = undefined;
    }
    waiter.reject(reason);
  }
}
