// Claims to one agent made in the same event-loop turn (a batch places many
// claims on each of a few nodes at once) travel as one POST /v1/claims
// instead of one request each; the agent streams each claim's result back as
// soon as it is answered, and each caller gets its own ClaimAnswer then, read
// as its own POST /v1/claim answer would have been.
//
// - A claim alone in its turn for its agent goes as POST /v1/claim (the
//   cheaper answer to read).
// - Claims are grouped by agent address and timeout (one libs/batcher
//   SameTurn each); a group larger than MAX_BATCH_CLAIMS is sent as several
//   batches.
// - An agent that answers POST /v1/claims with 404 or 405 does not know the
//   verb (an older agent during a rolling upgrade): nothing was claimed, so
//   the claims go one by one, and so does every claim to that address for a
//   while (`singleForMs`) before the verb is tried again.
// - A claim whose result has not come when the call ends (no answer within
//   the timeout, a connection lost, an answer that ended without it) is
//   `unreachable`: the caller asks the node by claim_ref, as after a single
//   claim's timeout. The others keep the results they already got.
import { MAX_BATCH_CLAIMS } from '@warmpool/api';
import { SameTurn } from '@warmpool/batcher';
import { messageOf, type Logger } from '@warmpool/runtime';
import { claimAnswerOf, type Answer, type ClaimAnswer } from './answers.js';
import { BatchResults, batchRefusal, claimsEnvelope, unreachable } from './batch-answers.js';

/**
 * One POST to an agent's claim verbs; a call that gets no answer throws. With `onLine`, a 200 answer's body comes
 * line by line as it arrives (its `text` is then '').
 */
export type SendClaims = (
  address: string,
  path: '/v1/claim' | '/v1/claims',
  body: string,
  timeoutMs: number,
  onLine?: (line: string) => void,
) => Promise<Answer>;

export interface ClaimCoalescerOptions {
  send: SendClaims;
  /** How long an agent without POST /v1/claims is sent single claims before the verb is tried again (default 60 s). */
  singleForMs?: number;
  now?: () => number;
  logger?: Logger | undefined;
}

export const DEFAULT_SINGLE_FOR_MS = 60_000;

export class ClaimCoalescer {
  readonly #send: SendClaims;
  readonly #singleForMs: number;
  readonly #now: () => number;
  readonly #logger: Logger | undefined;
  /** Each agent address's (and timeout's) claims of the turn, carried together; each answered when its result comes. */
  readonly #turns = new Map<string, SameTurn<string, Promise<ClaimAnswer>>>();
  /** Agents answered 404/405 to POST /v1/claims, until when they are sent single claims. */
  readonly #singleUntil = new Map<string, number>();

  constructor(options: ClaimCoalescerOptions) {
    this.#send = options.send;
    this.#singleForMs = options.singleForMs ?? DEFAULT_SINGLE_FOR_MS;
    this.#now = options.now ?? Date.now;
    this.#logger = options.logger;
  }

  /** `body` (a POST /v1/claim body) sent to `address` with the others of this turn; never rejects. */
  claim(address: string, body: string, timeoutMs: number): Promise<ClaimAnswer> {
    const key = `${timeoutMs} ${address}`;
    let turn = this.#turns.get(key);
    if (turn === undefined) {
      turn = new SameTurn((bodies) => Promise.resolve(this.#sendTurn(address, bodies, timeoutMs)), {
        maxItems: MAX_BATCH_CLAIMS,
      });
      this.#turns.set(key, turn);
    }
    // Never rejects: a failure of the turn's call is an unknown outcome for each of its claims.
    return turn.add(body).then(
      (answer) => answer,
      (err: unknown) => unreachable(messageOf(err)),
    );
  }

  /** Forgets an address: what it taught (it may be another agent next time), and its queues. */
  forget(address: string): void {
    this.#singleUntil.delete(address);
    for (const key of this.#turns.keys()) if (key.endsWith(` ${address}`)) this.#turns.delete(key);
  }

  /** One turn's claims to `address`: one request, or one each for a claim alone or an agent without the verb. */
  #sendTurn(address: string, bodies: readonly string[], timeoutMs: number): Array<Promise<ClaimAnswer>> {
    if (bodies.length === 1 || this.#singleOnly(address))
      return bodies.map((body) => this.#single(address, body, timeoutMs));
    const results = new BatchResults(bodies.length);
    void this.#batch(address, bodies, timeoutMs, results);
    return results.answers;
  }

  #singleOnly(address: string): boolean {
    const until = this.#singleUntil.get(address);
    if (until === undefined) return false;
    if (this.#now() < until) return true;
    this.#singleUntil.delete(address);
    return false;
  }

  #single(address: string, body: string, timeoutMs: number): Promise<ClaimAnswer> {
    return this.#send(address, '/v1/claim', body, timeoutMs).then(claimAnswerOf, (err: unknown) =>
      unreachable(messageOf(err)),
    );
  }

  /** Sends the batch and settles every one of `results`; never rejects. */
  async #batch(address: string, bodies: readonly string[], timeoutMs: number, results: BatchResults): Promise<void> {
    let answer: Answer;
    try {
      answer = await this.#send(address, '/v1/claims', claimsEnvelope(bodies), timeoutMs, (line) => results.line(line));
    } catch (err) {
      results.settleRest(() => unreachable(messageOf(err)));
      return;
    }
    if (answer.status !== 404 && answer.status !== 405) {
      results.settleRest(() => batchRefusal(answer));
      return;
    }
    if (!this.#singleUntil.has(address))
      this.#logger?.info('node agent does not serve POST /v1/claims: sending it single claims for a while', {
        address,
        status: answer.status,
        forMs: this.#singleForMs,
      });
    this.#singleUntil.set(address, this.#now() + this.#singleForMs);
    bodies.forEach((body, index) => results.settle(index, this.#single(address, body, timeoutMs)));
  }
}
