// A keyed work queue with client-go's workqueue semantics, the one every
// controller here drives its work through:
// - coalescing: a key is queued at most once however often it is added, and a
//   key added while it is being worked on runs once more right after;
// - no key is worked on by two workers at once; up to `concurrency` keys are;
// - workers start on a later macrotask than the add, so a burst of adds
//   delivered in one go (one watch chunk) is one run per key;
// - delayed adds keep the earliest time; an immediate add cancels the delay;
// - rate-limited requeue: a failed key waits base·2^n (capped, jittered) after
//   its n-th failure in a row, and a success forgets its failures;
// - shutdown: stop() drops what waits and resolves once the keys being worked
//   on have settled; adds while stopped are ignored (whoever starts it again
//   lists everything anew). start() after stop() runs again.
import { Backoff } from './backoff.js';

/** What the worker wants next for its key. */
export type WorkOutcome =
  /** Nothing until the key is added again; its failures are forgotten. */
  | { kind: 'done' }
  /** Run again after this long; its failures are forgotten. */
  | { kind: 'after'; ms: number }
  /** Failed in a way that may clear up: run again after the key's next backoff step (at least `minMs`). */
  | { kind: 'retry'; minMs?: number };

export const DONE: WorkOutcome = { kind: 'done' };

export interface WorkQueueOptions {
  /** Works on one key; a throw counts as `{ kind: 'retry' }` after onError. */
  work(key: string): Promise<WorkOutcome>;
  onError(key: string, err: unknown): void;
  /** Keys worked on at once (default 1). */
  concurrency?: number;
  /** The first retry's delay (default 250 ms); it doubles per failure in a row up to `retryMaxMs` (default 10 s). */
  retryInitialMs?: number;
  retryMaxMs?: number;
}

export class WorkQueue {
  readonly #options: WorkQueueOptions;
  readonly #concurrency: number;
  /** Keys ready to be worked on, in order; `#queued` mirrors it for O(1) membership. */
  readonly #waiting: string[] = [];
  readonly #queued = new Set<string>();
  readonly #active = new Set<string>();
  /** Added while active: queued again when its run ends. */
  readonly #dirty = new Set<string>();
  readonly #delayed = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  readonly #failures = new Map<string, CountingBackoff>();
  readonly #inFlight = new Set<Promise<void>>();
  #pumpScheduled: NodeJS.Immediate | undefined;
  #running = false;

  constructor(options: WorkQueueOptions) {
    this.#options = options;
    this.#concurrency = Math.max(1, options.concurrency ?? 1);
  }

  get running(): boolean {
    return this.#running;
  }

  /** Keys waiting, delayed or being worked on (O(1); a key both waiting and delayed counts twice). */
  get size(): number {
    return this.#queued.size + this.#active.size + this.#delayed.size;
  }

  /** Failures in a row of `key` since its last success (client-go's NumRequeues). */
  failures(key: string): number {
    return this.#failures.get(key)?.steps ?? 0;
  }

  start(): void {
    this.#running = true;
    this.#schedulePump();
  }

  add(key: string): void {
    if (!this.#running) return;
    this.#cancelDelay(key);
    if (this.#active.has(key)) {
      this.#dirty.add(key);
      return;
    }
    if (this.#queued.has(key)) return;
    this.#queued.add(key);
    this.#waiting.push(key);
    this.#schedulePump();
  }

  /** Adds `key` after `ms`; of several delays the earliest holds. */
  addAfter(key: string, ms: number): void {
    if (!this.#running) return;
    if (ms <= 0) return this.add(key);
    const at = Date.now() + ms;
    const existing = this.#delayed.get(key);
    if (existing !== undefined && existing.at <= at) return;
    if (existing !== undefined) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      this.#delayed.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.#delayed.set(key, { at, timer });
  }

  /** Adds `key` after its next backoff step (at least `minMs`): one more failure in a row. */
  addRateLimited(key: string, minMs = 0): void {
    if (!this.#running) return;
    let backoff = this.#failures.get(key);
    if (backoff === undefined) {
      backoff = new CountingBackoff(this.#options.retryInitialMs ?? 250, this.#options.retryMaxMs ?? 10_000);
      this.#failures.set(key, backoff);
    }
    this.addAfter(key, Math.max(backoff.next(), minMs));
  }

  /** The key succeeded: its next failure starts the backoff over. */
  forget(key: string): void {
    this.#failures.delete(key);
  }

  /** Stops taking work, drops what waits, and resolves once the keys being worked on have settled. */
  async stop(): Promise<void> {
    this.#running = false;
    if (this.#pumpScheduled !== undefined) clearImmediate(this.#pumpScheduled);
    this.#pumpScheduled = undefined;
    for (const { timer } of this.#delayed.values()) clearTimeout(timer);
    this.#delayed.clear();
    this.#waiting.length = 0;
    this.#queued.clear();
    this.#dirty.clear();
    this.#failures.clear();
    await Promise.all([...this.#inFlight]);
  }

  #cancelDelay(key: string): void {
    const existing = this.#delayed.get(key);
    if (existing === undefined) return;
    clearTimeout(existing.timer);
    this.#delayed.delete(key);
  }

  #schedulePump(): void {
    if (this.#pumpScheduled !== undefined || this.#waiting.length === 0) return;
    this.#pumpScheduled = setImmediate(() => {
      this.#pumpScheduled = undefined;
      this.#pump();
    });
  }

  #pump(): void {
    while (this.#running && this.#active.size < this.#concurrency && this.#waiting.length > 0) {
      const key = this.#waiting.shift() as string;
      this.#queued.delete(key);
      this.#active.add(key);
      const run = this.#run(key).finally(() => this.#inFlight.delete(run));
      this.#inFlight.add(run);
    }
  }

  async #run(key: string): Promise<void> {
    let outcome: WorkOutcome;
    try {
      outcome = await this.#options.work(key);
    } catch (err) {
      this.#options.onError(key, err);
      outcome = { kind: 'retry' };
    }
    this.#active.delete(key);
    if (this.#running) {
      if (outcome.kind === 'retry') {
        // The retry's delay holds even if the key was added meanwhile: what failed is retried, not hammered.
        this.#dirty.delete(key);
        this.addRateLimited(key, outcome.minMs);
      } else {
        this.forget(key);
        if (this.#dirty.delete(key)) this.add(key);
        else if (outcome.kind === 'after') this.addAfter(key, outcome.ms);
      }
    }
    this.#pump();
  }
}

/** A Backoff that counts its steps (the key's failures in a row). */
class CountingBackoff extends Backoff {
  steps = 0;

  constructor(initialMs: number, maxMs: number) {
    super({ initialMs, maxMs, factor: 2, jitter: 0.2 });
  }

  override next(): number {
    this.steps++;
    return super.next();
  }
}
