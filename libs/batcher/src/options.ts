/** How a batching window is shaped. All durations are in milliseconds. */
export interface BatcherOptions {
  /** Gap without a new item after which the window closes (each item extends it by this much). */
  readonly idleMs: number;
  /** Longest a window may stay open, however steadily items keep arriving. */
  readonly maxDurationMs: number;
  /** A batch closes as soon as it holds this many items; bounds the memory one batch can take. */
  readonly maxItems: number;
}

/**
 * Tuned for the claim path, where the window is paid directly as claim latency.
 * - idle 2 ms: a burst of concurrent requests reaches one event loop within about
 *   a millisecond of each other, so 2 ms coalesces a burst while a lone request
 *   waits at most ~2 ms (plus the 1 ms granularity of Node timers).
 * - max 20 ms: a steady stream faster than one item per 2 ms would otherwise keep
 *   the window open forever; 20 ms caps the added latency and still means at most
 *   50 batches (downstream jobs) a second per consumer.
 * - 2 000 items: the same memory bound as Karpenter's MaxItemsPerBatch.
 */
export const DEFAULT_BATCH_OPTIONS: BatcherOptions = Object.freeze({
  idleMs: 2,
  maxDurationMs: 20,
  maxItems: 2_000,
});

/** The original Karpenter values: BatchIdleDuration 1 s, MaxBatchDuration 10 s, MaxItemsPerBatch 2 000. */
export const KARPENTER_BATCH_OPTIONS: BatcherOptions = Object.freeze({
  idleMs: 1_000,
  maxDurationMs: 10_000,
  maxItems: 2_000,
});

/** Fills the gaps from DEFAULT_BATCH_OPTIONS and refuses values that would make the window meaningless. */
export function resolveBatcherOptions(options: Partial<BatcherOptions> = {}): BatcherOptions {
  const resolved: BatcherOptions = { ...DEFAULT_BATCH_OPTIONS, ...withoutUndefined(options) };
  requireDuration('idleMs', resolved.idleMs);
  requireDuration('maxDurationMs', resolved.maxDurationMs);
  if (!Number.isSafeInteger(resolved.maxItems) || resolved.maxItems < 1) {
    throw new RangeError(`maxItems must be an integer >= 1, got ${resolved.maxItems}`);
  }
  return Object.freeze(resolved);
}

function requireDuration(name: string, value: number): void {
  if (!Number.isFinite(value) || value < 0) {
    throw new RangeError(`${name} must be a finite number of milliseconds >= 0, got ${value}`);
  }
}

// `{ idleMs: undefined }` must not erase the default (exactOptionalPropertyTypes is off).
function withoutUndefined(options: Partial<BatcherOptions>): Partial<BatcherOptions> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
}
