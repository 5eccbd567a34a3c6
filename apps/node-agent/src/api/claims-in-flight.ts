// The bound on claims in flight to sandboxd. Past it a claim is refused at
// once (429 with Retry-After) instead of queueing behind the others: a queue
// would only turn a slow sandboxd into slower claims, and its waiters into
// timeouts whose outcome nobody knows.
import { errorReply, type Reply } from './responses.js';

export class ClaimsInFlight {
  readonly limit: number;
  #count = 0;

  constructor(limit: number) {
    if (!Number.isSafeInteger(limit) || limit < 1)
      throw new RangeError(`the limit of claims in flight must be a positive integer (got ${limit})`);
    this.limit = limit;
  }

  get count(): number {
    return this.#count;
  }

  /** Takes a slot; false when all are taken. Each true must be followed by exactly one release(). */
  tryAcquire(): boolean {
    if (this.#count >= this.limit) return false;
    this.#count += 1;
    return true;
  }

  release(): void {
    this.#count -= 1;
  }

  /** The 429 for a claim past the limit. */
  refusal(): Reply {
    return errorReply(
      429,
      'TooManyClaimsInFlight',
      `the node agent already has ${this.limit} claims in flight to sandboxd; retry shortly`,
      { limit: this.limit },
      { 'retry-after': '1' },
    );
  }
}
