// Timing helpers shared by the informer, conflict retry and leader election.

export interface BackoffOptions {
  /** First delay. */
  initialMs?: number;
  /** Delays never grow past this. */
  maxMs?: number;
  /** Growth per step. */
  factor?: number;
  /** Each delay is stretched by up to this fraction at random, so many clients do not retry in step. */
  jitter?: number;
}

/** Exponential backoff with jitter; `reset()` after a success starts again from `initialMs`. */
export class Backoff {
  readonly #initialMs: number;
  readonly #maxMs: number;
  readonly #factor: number;
  readonly #jitter: number;
  #current: number;

  constructor(options: BackoffOptions = {}) {
    this.#initialMs = options.initialMs ?? 250;
    this.#maxMs = options.maxMs ?? 10_000;
    this.#factor = options.factor ?? 2;
    this.#jitter = options.jitter ?? 0.2;
    this.#current = this.#initialMs;
  }

  next(): number {
    const base = this.#current;
    this.#current = Math.min(this.#maxMs, this.#current * this.#factor);
    return Math.min(this.#maxMs, jittered(base, this.#jitter));
  }

  reset(): void {
    this.#current = this.#initialMs;
  }
}

export function jittered(ms: number, jitter: number): number {
  return jitter > 0 ? ms * (1 + Math.random() * jitter) : ms;
}

/** Waits `ms`, or less if `signal` aborts; never rejects, so loops just check their own state after it. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener('abort', done, { once: true });
  });
}
