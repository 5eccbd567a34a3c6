// The one global reconcile, coalesced: any number of pokes while idle start
// one run (on the next macrotask, so a burst delivered in one go is one run);
// pokes during a run schedule exactly one follow-up run. There is no queue of
// objects: the run reads the whole world from the caches, so the reasons are
// only for logs and metrics.

export interface CoalescingTriggerOptions {
  run(reasons: ReadonlySet<string>): Promise<void>;
  /** A run that threw; the trigger keeps going. */
  onError?(err: unknown): void;
}

export class CoalescingTrigger {
  readonly #options: CoalescingTriggerOptions;
  #pending: Set<string> | undefined;
  #scheduled: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #closed = false;
  #runs = 0;

  constructor(options: CoalescingTriggerOptions) {
    this.#options = options;
  }

  /** Runs started so far. */
  get runs(): number {
    return this.#runs;
  }

  poke(reason: string): void {
    if (this.#closed) return;
    (this.#pending ??= new Set()).add(reason);
    if (this.#running !== undefined || this.#scheduled !== undefined) return;
    this.#scheduled = setTimeout(() => {
      this.#scheduled = undefined;
      this.#running = this.#drain();
    }, 0);
  }

  /** No run starts after this; waits for the one in flight. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#scheduled);
    this.#scheduled = undefined;
    this.#pending = undefined;
    await this.#running;
  }

  async #drain(): Promise<void> {
    try {
      while (this.#pending !== undefined && !this.#closed) {
        const reasons = this.#pending;
        this.#pending = undefined;
        this.#runs++;
        try {
          await this.#options.run(reasons);
        } catch (err) {
          this.#options.onError?.(err);
        }
      }
    } finally {
      this.#running = undefined;
    }
  }
}
