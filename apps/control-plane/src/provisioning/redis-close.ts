// Closing what talks to Redis within the Redis timeout, so that a shutdown
// with Redis stopped (SIGSTOP, a paused VM, a partition) ends well inside
// --shutdown-timeout. BullMQ's graceful close waits on Redis: the Worker's
// blocking read is retried on a new connection, its bookkeeping and the
// Queue's QUIT each wait out the timeout, so a stopped Redis held a replica's
// close for two blocks plus three timeouts (50 s at the defaults).
//
// Each graceful close gets at most the Redis timeout T; past it, its
// connections are cut (what it still waited for fails at once), and the
// close is left after CUT_WAIT_MS at most. Time in which the close's own
// work runs (a worker's batches, up to their deadline) is not counted in T:
// T is for Redis. Once Redis is seen away (the commands connection is not
// ready, or one close went unanswered) every later one is cut at once:
// nothing more can be recorded.
import type { Logger } from '@warmpool/runtime';
import { settlesWithin } from './within.js';

/**
 * How long a cut close may take: cutting is local (each socket is destroyed redis/dead-peer.ts's
 * DISCONNECT_WAIT_MS after its disconnect), but BullMQ disconnects a connection only once its first
 * commands (the handshake it sends on connecting) have settled, and with Redis stopped those wait out
 * their own timeout.
 */
const CUT_WAIT_MS = 1_000;

export interface RedisCloseOptions {
  /** The Redis timeout T: the longest a graceful close may wait for Redis. */
  timeoutMs: number;
  /** Whether Redis answers now, by the commands connection (the dead-peer timeout drops it when Redis stops). */
  answering(): boolean;
  logger: Logger;
}

/** Work a close waits for besides Redis: batches being served, each up to its deadline (the drain's end). */
export interface Draining {
  /** Settles once no work runs (at once when none does), by the drain's end at the latest. */
  drained(): Promise<void>;
  /** Whether work runs now, before the drain's end. */
  busy(): boolean;
}

export class RedisClose {
  readonly #options: RedisCloseOptions;
  #unanswered = false;

  constructor(options: RedisCloseOptions) {
    this.#options = options;
  }

  /**
   * Awaits `closing` for at most the Redis timeout (not at all once Redis is seen away), not counting the time
   * `draining` has work running, then cuts: `cut()` drops the connections `closing` waits on, and `closing` is
   * awaited once more, CUT_WAIT_MS at most.
   */
  async closeOrCut(what: string, closing: Promise<unknown>, cut: () => unknown, draining?: Draining): Promise<void> {
    const { timeoutMs, logger } = this.#options;
    // Its failure is the caller's to hear (the await below), never an unhandled rejection while the cut runs.
    closing.catch(() => undefined);
    if (await this.#settles(closing, draining)) {
      await closing;
      return;
    }
    this.#unanswered = true;
    // Either Redis is away, or the close outlasted the drain and T (a batch past its deadline, a Redis too slow).
    logger.warn(`cutting ${what}'s Redis connections: its close did not end within the Redis timeout`, {
      timeoutMs,
      redisAnswering: this.#options.answering(),
    });
    const cutting = Promise.allSettled([Promise.resolve().then(cut), closing]);
    if (!(await settlesWithin(cutting, CUT_WAIT_MS)))
      logger.warn(`left ${what} closing: its connections end with the process`, { waitedMs: CUT_WAIT_MS });
  }

  /**
   * Whether `closing` settles while Redis answers: after `draining`'s work, then within the Redis timeout, again
   * after work that started meanwhile (a job BullMQ handed in as the close came in).
   */
  async #settles(closing: Promise<unknown>, draining: Draining | undefined): Promise<boolean> {
    let settled = false;
    const done = (): void => {
      settled = true;
    };
    closing.then(done, done);
    for (;;) {
      if (draining !== undefined) await draining.drained();
      if (settled) return true;
      if (this.#unanswered || !this.#options.answering()) return false;
      if (await settlesWithin(closing, this.#options.timeoutMs)) return true;
      if (draining?.busy() !== true) return false;
    }
  }
}
