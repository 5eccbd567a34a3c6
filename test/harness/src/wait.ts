// Polling until something holds, bounded in time: the one wait every test,
// benchmark and the local stack use.
import { messageOf } from '@warmpool/runtime';

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export interface EventuallyOptions {
  /** Default 20 s: generous, the machine running the tests is shared. */
  timeoutMs?: number;
  /** Default 50 ms. */
  intervalMs?: number;
  /** What is awaited, for the timeout message; a function is read only when the wait fails (e.g. a log tail). */
  what?: string | (() => string);
  /** Stop early: a reason to give up (e.g. the process died), or undefined to keep waiting. */
  abort?: () => string | undefined;
}

/**
 * Polls `check` until it returns something other than undefined or false, and
 * returns that. A throw counts as "not yet"; the timeout error carries the last
 * error (as its cause too) or the last value seen. A check that returns nothing
 * (an assertion block) is refused by the types: return true once it passed.
 */
export async function eventually<T extends NonNullable<unknown> | null>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  options: EventuallyOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const deadline = Date.now() + timeoutMs;
  const what = (): string => (typeof options.what === 'function' ? options.what() : (options.what ?? 'condition'));
  let lastError: unknown;
  let lastValue: unknown;
  for (;;) {
    try {
      const value = await check();
      lastValue = value;
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    const aborted = options.abort?.();
    if (aborted !== undefined) throw new Error(`${aborted}\n${what()}`);
    if (Date.now() >= deadline) {
      const detail =
        lastError !== undefined
          ? `: ${messageOf(lastError)}`
          : lastValue !== undefined
            ? ` (last: ${JSON.stringify(lastValue)})`
            : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what()}${detail}`, { cause: lastError });
    }
    await sleep(options.intervalMs ?? 50);
  }
}
