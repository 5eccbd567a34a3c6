// Calls made in the same event-loop turn, carried together: each add() is
// one caller's item; once the turn ends (setImmediate: every callback and
// microtask of the turn has run) the items go to `run` together, at most
// `maxItems` at a time, and each caller gets its own result back.
//
// Invariants:
// - every item reaches `run` exactly once, in the order it was added;
// - `run` answers one result per item, in the same order (a mismatch rejects
//   every caller of that call rather than hand a result to the wrong one);
// - a call that rejects rejects each of its callers with that error, and no
//   other call's callers.

export interface SameTurnOptions {
  /** Items per call of `run` at most (default: unbounded). */
  maxItems?: number;
}

interface Waiting<I, O> {
  item: I;
  resolve(result: O): void;
  reject(err: unknown): void;
}

export class SameTurn<I, O> {
  readonly #run: (items: readonly I[]) => Promise<readonly O[]>;
  readonly #maxItems: number;
  #waiting: Array<Waiting<I, O>> = [];

  constructor(run: (items: readonly I[]) => Promise<readonly O[]>, options: SameTurnOptions = {}) {
    this.#run = run;
    this.#maxItems = Math.max(1, options.maxItems ?? Number.POSITIVE_INFINITY);
  }

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      if (this.#waiting.length === 0) setImmediate(() => this.#flush());
      this.#waiting.push({ item, resolve, reject });
    });
  }

  #flush(): void {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (let at = 0; at < waiting.length; at += this.#maxItems) this.#call(waiting.slice(at, at + this.#maxItems));
  }

  #call(callers: ReadonlyArray<Waiting<I, O>>): void {
    let answered: Promise<readonly O[]>;
    try {
      answered = this.#run(callers.map((c) => c.item));
    } catch (err) {
      answered = Promise.reject(err);
    }
    answered.then(
      (results) => {
        if (results.length !== callers.length) {
          const err = new Error(`a same-turn call answered ${results.length} results for ${callers.length} items`);
          for (const caller of callers) caller.reject(err);
          return;
        }
        callers.forEach((caller, i) => caller.resolve(results[i] as O));
      },
      (err: unknown) => {
        for (const caller of callers) caller.reject(err);
      },
    );
  }
}
