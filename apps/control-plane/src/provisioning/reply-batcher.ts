// A job's outcomes on their way back: each claim's outcome goes to every
// position of its claimRef in the batch; outcomes that become final in the
// same tick share one reply (one LPUSH when the caller is another replica).
import type { BatchJob, BatchReply, ClaimOutcome, IndexedOutcome } from '@warmpool/api';
import { replayOf } from './batch-work.js';

export class ReplyBatcher {
  readonly #jobId: string;
  readonly #positions = new Map<string, number[]>();
  readonly #send: (reply: BatchReply) => Promise<void>;
  #pending: IndexedOutcome[] = [];
  readonly #sending: Array<Promise<void>> = [];
  #failure: unknown;

  constructor(jobId: string, data: BatchJob, send: (reply: BatchReply) => Promise<void>) {
    this.#jobId = jobId;
    this.#send = send;
    data.claims.forEach((claim, index) => {
      const positions = this.#positions.get(claim.claimRef);
      if (positions === undefined) this.#positions.set(claim.claimRef, [index]);
      else positions.push(index);
    });
  }

  add(outcome: ClaimOutcome): void {
    if (this.#pending.length === 0) setImmediate(() => this.#flush());
    (this.#positions.get(outcome.claimRef) ?? []).forEach((index, i) =>
      this.#pending.push({ ...(i === 0 ? outcome : replayOf(outcome)), index }),
    );
  }

  /** Resolves once every outcome added so far is delivered; rejects when one could not be. */
  async flushed(): Promise<void> {
    this.#flush();
    await Promise.all(this.#sending);
    if (this.#failure !== undefined) throw this.#failure;
  }

  #flush(): void {
    if (this.#pending.length === 0) return;
    const outcomes = this.#pending;
    this.#pending = [];
    // Caught here (a send may fail before flushed() is awaited) and rethrown by flushed().
    this.#sending.push(
      this.#send({ jobId: this.#jobId, outcomes }).catch((err: unknown) => {
        this.#failure ??= err;
      }),
    );
  }
}
