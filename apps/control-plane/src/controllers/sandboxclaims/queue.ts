// A keyed work queue in the manner of client-go's: a key is never worked on
// by two workers at once (an add while it is being worked on runs it once more
// afterwards), any number of adds while it waits run it once, delayed adds keep
// the earliest time, and failed keys back off exponentially per key. Up to
// `concurrency` keys are worked on at once: a SandboxClaim's work mostly waits
// on its batch, and a batch only fills when many claims wait together.
import { Backoff } from '@warmpool/kube';

/** What the worker wants next for its key. */
export type WorkOutcome =
  /** Nothing until the key is added again; its backoff starts over. */
  | { kind: 'done' }
  /** Run again after this long; its backoff starts over. */
  | { kind: 'after'; ms: number }
  /** Failed in a way that may clear up: run again after the key's next backoff step (at least `minMs`). */
  | { kind: 'retry'; minMs?: number };

export interface KeyedQueueOptions {
  concurrency: number;
  work(key: string): Promise<WorkOutcome>;
  /** A worker threw: the key is retried with backoff. */
  onError(key: string, err: unknown): void;
  retryInitialMs?: number;
  retryMaxMs?: number;
}

export class KeyedQueue {
  readonly #options: KeyedQueueOptions;
  readonly #waiting: string[] = [];
  readonly #queued = new Set<string>();
  readonly #active = new Set<string>();
  readonly #again = new Set<string>();
  readonly #timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  readonly #backoffs = new Map<string, Backoff>();
  readonly #inFlight = new Set<Promise<void>>();
  #running = false;

  constructor(options: KeyedQueueOptions) {
    this.#options = options;
  }

  get running(): boolean {
    return this.#running;
  }

  /** Keys waiting, delayed or being worked on (O(1); a key both waiting and delayed counts twice). */
  get size(): number {
    return this.#queued.size + this.#active.size + this.#timers.size;
  }

  start(): void {
    this.#running = true;
    this.#pump();
  }

  /** Adds are ignored while stopped: the leader that runs next lists everything again. */
  add(key: string): void {
    if (!this.#running) return;
    this.#cancelTimer(key);
    if (this.#active.has(key)) {
      this.#again.add(key);
      return;
    }
    if (this.#queued.has(key)) return;
    this.#queued.add(key);
    this.#waiting.push(key);
    this.#pump();
  }

  addAfter(key: string, ms: number): void {
    if (!this.#running) return;
    if (ms <= 0) return this.add(key);
    const at = Date.now() + ms;
    const existing = this.#timers.get(key);
    if (existing !== undefined && existing.at <= at) return;
    if (existing !== undefined) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      this.#timers.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.#timers.set(key, { at, timer });
  }

  /** Stops taking work and waits for the keys being worked on. */
  async stop(): Promise<void> {
    this.#running = false;
    for (const { timer } of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    this.#waiting.length = 0;
    this.#queued.clear();
    this.#again.clear();
    this.#backoffs.clear();
    await Promise.all([...this.#inFlight]);
  }

  #cancelTimer(key: string): void {
    const existing = this.#timers.get(key);
    if (existing === undefined) return;
    clearTimeout(existing.timer);
    this.#timers.delete(key);
  }

  #pump(): void {
    while (this.#running && this.#active.size < this.#options.concurrency && this.#waiting.length > 0) {
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
        let backoff = this.#backoffs.get(key);
        if (backoff === undefined) {
          backoff = new Backoff({
            initialMs: this.#options.retryInitialMs ?? 250,
            maxMs: this.#options.retryMaxMs ?? 10_000,
            factor: 2,
            jitter: 0.2,
          });
          this.#backoffs.set(key, backoff);
        }
        this.#again.delete(key);
        this.addAfter(key, Math.max(backoff.next(), outcome.minMs ?? 0));
      } else {
        this.#backoffs.delete(key);
        if (this.#again.delete(key)) this.add(key);
        else if (outcome.kind === 'after') this.addAfter(key, outcome.ms);
      }
    }
    this.#pump();
  }
}
