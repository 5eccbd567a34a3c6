// Claims to one agent made in the same event-loop turn (a batch places many
// claims on each of a few nodes at once) travel as one POST /v1/claims and
// one answer instead of one request each; every caller still gets its own
// ClaimAnswer, read as its own POST /v1/claim answer would have been.
//
// - A claim alone in its turn for its agent goes as POST /v1/claim (the
//   cheaper answer to read).
// - Claims are grouped by agent address and timeout; a group larger than
//   MAX_BATCH_CLAIMS is sent as several batches.
// - An agent that answers POST /v1/claims with 404 or 405 does not know the
//   verb (an older agent during a rolling upgrade): nothing was claimed, so
//   the claims go one by one, and so does every claim to that address for a
//   while (`singleForMs`) before the verb is tried again.
// - A batch that gets no answer leaves every claim in it `unreachable`: the
//   caller asks the node by claim_ref, as after a single claim's timeout.
import { MAX_BATCH_CLAIMS } from '@warmpool/api';
import { messageOf, type Logger } from '@warmpool/runtime';
import { claimAnswerOf, type Answer, type ClaimAnswer } from './answers.js';
import { batchClaimAnswers, claimsEnvelope, unreachable } from './batch-answers.js';

/** One POST to an agent's claim verbs; a call that gets no answer throws. */
export type SendClaims = (
  address: string,
  path: '/v1/claim' | '/v1/claims',
  body: string,
  timeoutMs: number,
) => Promise<Answer>;

export interface ClaimCoalescerOptions {
  send: SendClaims;
  /** How long an agent without POST /v1/claims is sent single claims before the verb is tried again (default 60 s). */
  singleForMs?: number;
  now?: () => number;
  logger?: Logger | undefined;
}

interface Pending {
  body: string;
  resolve(answer: ClaimAnswer): void;
}

interface Group {
  address: string;
  timeoutMs: number;
  items: Pending[];
}

export const DEFAULT_SINGLE_FOR_MS = 60_000;

export class ClaimCoalescer {
  readonly #send: SendClaims;
  readonly #singleForMs: number;
  readonly #now: () => number;
  readonly #logger: Logger | undefined;
  /** This turn's claims, by timeout and address. */
  readonly #groups = new Map<string, Group>();
  /** Agents answered 404/405 to POST /v1/claims, until when they are sent single claims. */
  readonly #singleUntil = new Map<string, number>();
  #flushScheduled = false;

  constructor(options: ClaimCoalescerOptions) {
    this.#send = options.send;
    this.#singleForMs = options.singleForMs ?? DEFAULT_SINGLE_FOR_MS;
    this.#now = options.now ?? Date.now;
    this.#logger = options.logger;
  }

  /** `body` (a POST /v1/claim body) sent to `address` with the others of this turn; never rejects. */
  claim(address: string, body: string, timeoutMs: number): Promise<ClaimAnswer> {
    return new Promise((resolve) => {
      const key = `${timeoutMs} ${address}`;
      let group = this.#groups.get(key);
      if (group === undefined) {
        group = { address, timeoutMs, items: [] };
        this.#groups.set(key, group);
      }
      group.items.push({ body, resolve });
      if (this.#flushScheduled) return;
      this.#flushScheduled = true;
      // After every callback of this turn and the promises they settle: what they claim goes in the same batch.
      setImmediate(() => this.#flush());
    });
  }

  /** Forgets what an address taught (it may be another agent next time). */
  forget(address: string): void {
    this.#singleUntil.delete(address);
  }

  #flush(): void {
    this.#flushScheduled = false;
    const groups = [...this.#groups.values()];
    this.#groups.clear();
    for (const { address, timeoutMs, items } of groups) {
      if (items.length === 1 || this.#singleOnly(address)) {
        for (const item of items) this.#single(address, item, timeoutMs);
        continue;
      }
      for (let i = 0; i < items.length; i += MAX_BATCH_CLAIMS)
        void this.#batch(address, items.slice(i, i + MAX_BATCH_CLAIMS), timeoutMs);
    }
  }

  #singleOnly(address: string): boolean {
    const until = this.#singleUntil.get(address);
    if (until === undefined) return false;
    if (this.#now() < until) return true;
    this.#singleUntil.delete(address);
    return false;
  }

  #single(address: string, item: Pending, timeoutMs: number): void {
    this.#send(address, '/v1/claim', item.body, timeoutMs).then(
      (answer) => item.resolve(claimAnswerOf(answer)),
      (err: unknown) => item.resolve(unreachable(messageOf(err))),
    );
  }

  async #batch(address: string, items: readonly Pending[], timeoutMs: number): Promise<void> {
    let answer: Answer;
    try {
      answer = await this.#send(address, '/v1/claims', claimsEnvelope(items.map((i) => i.body)), timeoutMs);
    } catch (err) {
      const message = messageOf(err);
      for (const item of items) item.resolve(unreachable(message));
      return;
    }
    if (answer.status === 404 || answer.status === 405) {
      if (!this.#singleUntil.has(address))
        this.#logger?.info('node agent does not serve POST /v1/claims: sending it single claims for a while', {
          address,
          status: answer.status,
          forMs: this.#singleForMs,
        });
      this.#singleUntil.set(address, this.#now() + this.#singleForMs);
      for (const item of items) this.#single(address, item, timeoutMs);
      return;
    }
    const answers = batchClaimAnswers(answer, items.length);
    items.forEach((item, i) => item.resolve(answers[i] as ClaimAnswer));
  }
}
