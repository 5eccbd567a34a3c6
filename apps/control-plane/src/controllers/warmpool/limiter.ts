// A counting semaphore: at most `limit` tasks at once, the rest wait in order.

export class Limiter {
  readonly #limit: number;
  #active = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(limit: number) {
    this.#limit = Math.max(1, Math.floor(limit));
  }

  async run<R>(task: () => Promise<R>): Promise<R> {
    if (this.#active >= this.#limit) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#active++;
    try {
      return await task();
    } finally {
      this.#active--;
      this.#waiting.shift()?.();
    }
  }
}

/** Runs `task` for every item, at most `limit` at a time; settles when all have. Errors are the task's to handle. */
export async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  task: (item: T) => Promise<void>,
): Promise<void> {
  const limiter = new Limiter(limit);
  await Promise.all(items.map((item) => limiter.run(() => task(item))));
}
