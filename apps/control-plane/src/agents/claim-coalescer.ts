// Claims to one agent made in the same event-loop turn (a batch places many
// claims on each of a few nodes at once) travel as one POST /v1/claims and
// one answer instead of one request each; every caller still gets its own
// ClaimAnswer, read as its own POST /v1/claim answer would have been.
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
// - A batch that gets no answer leaves every claim in it `unreachable`: the
//   caller asks the node by claim_ref, as after a single claim's timeout.
//   The agent answers a batch once its slowest claim is answered, so a claim
//   that turns cold on the node holds the others' answers back, past the
//   call's timeout on a warm placement: all of them are then looked up.
import { MAX_BATCH_CLAIMS } from '@warmpool/api';
import { SameTurn } from '@warmpool/batcher';
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

export const DEFAULT_SINGLE_FOR_MS = 60_000;

export class ClaimCoalescer {
  readonly #send: SendClaims;
  readonly #singleForMs: number;
  readonly #now: () => number;
  readonly #logger: Logger | undefined;
  /** Each agent address's (and timeout's) claims of the turn, carried together. */
  readonly #turns = new Map<string, SameTurn<string, ClaimAnswer>>();
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
      turn = new SameTurn((bodies) => this.#sendTurn(address, bodies, timeoutMs), { maxItems: MAX_BATCH_CLAIMS });
      this.#turns.set(key, turn);
    }
    // Never rejects: a failure of the turn's call is an unknown outcome for each of its claims.
    return turn.add(body).catch((err: unknown) => unreachable(messageOf(err)));
  }

  /** Forgets an address: what it taught (it may be another agent next time), and its queues. */
  forget(address: string): void {
    this.#singleUntil.delete(address);
    for (const key of this.#turns.keys()) if (key.endsWith(` ${address}`)) this.#turns.delete(key);
  }

  /** One turn's claims to `address`: one request, or one each for a claim alone or an agent without the verb. */
  #sendTurn(address: string, bodies: readonly string[], timeoutMs: number): Promise<ClaimAnswer[]> {
    if (bodies.length === 1 || this.#singleOnly(address))
      return Promise.all(bodies.map((body) => this.#single(address, body, timeoutMs)));
    return this.#batch(address, bodies, timeoutMs);
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

  async #batch(address: string, bodies: readonly string[], timeoutMs: number): Promise<ClaimAnswer[]> {
    let answer: Answer;
    try {
      answer = await this.#send(address, '/v1/claims', claimsEnvelope(bodies), timeoutMs);
    } catch (err) {
      const message = messageOf(err);
      return bodies.map(() => unreachable(message));
    }
    if (answer.status !== 404 && answer.status !== 405) return batchClaimAnswers(answer, bodies.length);
    if (!this.#singleUntil.has(address))
      this.#logger?.info('node agent does not serve POST /v1/claims: sending it single claims for a while', {
        address,
        status: answer.status,
        forMs: this.#singleForMs,
      });
    this.#singleUntil.set(address, this.#now() + this.#singleForMs);
    return Promise.all(bodies.map((body) => this.#single(address, body, timeoutMs)));
  }
}
