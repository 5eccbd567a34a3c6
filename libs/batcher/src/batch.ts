/** Why a batch stopped taking items. */
export type BatchCloseReason =
  /** No item arrived for `idleMs`. */
  | 'idle'
  /** The window reached `maxDurationMs`. */
  | 'maxDuration'
  /** The batch reached `maxItems`. */
  | 'maxItems'
  /** `flush()` ended it early. */
  | 'flush'
  /** `close()` ended it (possibly empty). */
  | 'close';

/** What `wait()` hands over. */
export interface Batch<T> {
  /** Increases by one per batch; the same id the items' gates resolve with. */
  readonly id: number;
  /** In the order they were added. */
  readonly items: readonly T[];
  /**
   * How long the window was open: from the moment a waiting `wait()` had a first
   * item to the hand-over. 0 when the batch was already closed (full, flushed or
   * closed) before any `wait()` took it.
   */
  readonly windowMs: number;
  readonly closedBy: BatchCloseReason;
}

/** What an item's gate resolves with once its batch has been handed over. */
export interface BatchReceipt {
  readonly batchId: number;
  /** Items in that batch. */
  readonly size: number;
  readonly windowMs: number;
  readonly closedBy: BatchCloseReason;
}
