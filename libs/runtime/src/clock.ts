// Time is injected so tests can step through staleness, timers and TTLs
// deterministically instead of sleeping.

export interface Clock {
  /** Milliseconds since the epoch (wall clock). */
  now(): number;
}

export interface Timer {
  cancel(): void;
}

/** A Clock that also runs timers. */
export interface TimerClock extends Clock {
  /** Run `fn` once after `ms`; the timer must not keep the process alive on its own. */
  setTimeout(fn: () => void, ms: number): Timer;
}

// Node refuses delays above 2^31-1 ms and fires them at once instead.
const MAX_DELAY_MS = 2_147_483_647;

/** Wall-clock time and Node timers, looked up at call time so test fake timers also apply. */
export const systemClock: TimerClock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const handle = setTimeout(fn, Math.min(Math.max(0, ms), MAX_DELAY_MS));
    handle.unref();
    return { cancel: () => clearTimeout(handle) };
  },
};
