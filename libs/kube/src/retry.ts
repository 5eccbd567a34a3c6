// client-go's retry.RetryOnConflict: the caller's function re-reads the object
// and writes it again; we repeat it, after a short backoff, for as long as the
// write loses an optimistic-concurrency race (409 Conflict), a bounded number of times.
import { jittered, sleep } from './backoff.js';
import { isConflict } from './errors.js';

export interface RetryOptions {
  /** Attempts in all, the first included (client-go's DefaultRetry: 5). */
  steps?: number;
  /** Wait before the second attempt (10 ms). */
  durationMs?: number;
  /** Growth of the wait per attempt (1: constant). */
  factor?: number;
  /** Random stretch of each wait (0.1). */
  jitter?: number;
  /** Which errors are worth another attempt; 409 Conflict by default. */
  retriable?: (err: unknown) => boolean;
  signal?: AbortSignal;
}

/**
 * Runs `fn` until it succeeds, it throws an error that is not retriable, or
 * `steps` attempts have failed; then the last error is thrown. `fn` must read
 * the current object itself each time, since a stale copy would conflict again.
 */
export async function retryOnConflict<R>(fn: (attempt: number) => Promise<R>, options: RetryOptions = {}): Promise<R> {
  const steps = Math.max(1, options.steps ?? 5);
  const factor = options.factor ?? 1;
  const jitter = options.jitter ?? 0.1;
  const retriable = options.retriable ?? isConflict;
  let delay = options.durationMs ?? 10;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      if (attempt >= steps || !retriable(err) || options.signal?.aborted) throw err;
    }
    await sleep(jittered(delay, jitter), options.signal);
    delay *= factor;
  }
}
