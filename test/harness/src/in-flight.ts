// Knowing, from outside, that code under test has gone quiet, without a hook
// in the code itself. The test routes every asynchronous collaborator it hands
// over (fakes, in-memory stores) through track(); quiet() resolves once no
// tracked call is in flight and neither the number of calls started nor the
// caller's progress count (e.g. runs started) has moved for a few macrotask
// turns in a row.
//
// What it sees: each tracked call from its start until its promise settles;
// whatever the code does synchronously or on microtasks in between (that has
// run before the next turn); work it defers with setTimeout(0) or setImmediate
// (that runs within a turn, and shows once it starts a tracked call or moves
// `progress`).
// What it cannot see: a real-time wait inside the code under test (a sleep, a
// backoff, a periodic timer of any length above a turn): quiet() may resolve
// while one is pending, and what it starts later is not waited for. Nor calls
// to collaborators that were not tracked, nor work that moves neither count.
// Under fake timers the turns never come: advance the fake clock instead.

/** Unchanged turns that count as quiet: a setTimeout(0) queued before a turn's own timer fires before it. */
const QUIET_TURNS = 3;

export interface QuietOptions {
  /** Default 3. */
  turns?: number;
  /** Default 10 s: then quiet() rejects, saying what is still going on. */
  timeoutMs?: number;
}

export class InFlight {
  #inFlight = 0;
  #started = 0;

  /** Tracked calls not yet settled. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Tracked calls started so far. */
  get started(): number {
    return this.#started;
  }

  /** Makes `call` and counts it in flight until its promise settles; its result or rejection passes through. */
  async track<T>(call: () => Promise<T>): Promise<T> {
    this.#started++;
    this.#inFlight++;
    try {
      return await call();
    } finally {
      this.#inFlight--;
    }
  }

  /**
   * Resolves once nothing tracked is in flight and neither `started` nor
   * `progress()` has moved for `turns` setTimeout(0) turns in a row.
   */
  async quiet(progress: () => number = () => 0, options: QuietOptions = {}): Promise<void> {
    const turns = options.turns ?? QUIET_TURNS;
    const timeoutMs = options.timeoutMs ?? 10_000;
    const deadline = Date.now() + timeoutMs;
    let seen = this.#started + progress();
    let calm = 0;
    while (calm < turns) {
      if (Date.now() > deadline)
        throw new Error(
          `not quiet after ${timeoutMs} ms: ${this.#inFlight} tracked calls in flight, ${this.#started} started`,
        );
      await new Promise((resolve) => setTimeout(resolve, 0));
      const now = this.#started + progress();
      calm = this.#inFlight === 0 && now === seen ? calm + 1 : 0;
      seen = now;
    }
  }
}
