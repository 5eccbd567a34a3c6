// POST /v1/claims on the control plane's side: the envelope it sends, and
// each claim's ClaimAnswer read from its result line as it arrives, exactly
// as the claim's own POST /v1/claim answer would have been read.
import { agentBatchClaimResultSchema, type AgentBatchClaimResult } from '@warmpool/api';
import { claimAnswerOf, claimAnswerOfJson, jsonOf, reasonText, type Answer, type ClaimAnswer } from './answers.js';

/** `{"claims":[…]}` around claim bodies that are JSON already (claimBody): no re-encoding. */
export function claimsEnvelope(bodies: readonly string[]): string {
  return `{"claims":[${bodies.join(',')}]}`;
}

/** Not a claim's answer at all: the claim may or may not have been served, so it is asked for by claim_ref. */
export function unreachable(message: string): ClaimAnswer {
  return { ok: false, refusal: { kind: 'unreachable', message } };
}

/**
 * Each claim's answer for a POST /v1/claims that did not answer 200 (a 404 or 405 is the caller's: an agent without
 * the verb). A refused envelope (4xx, or 503 NoToken: the agent ran none of them) refuses every claim as the single
 * verb would have; any other failure leaves every outcome unknown.
 */
export function batchRefusal(answer: Answer): ClaimAnswer {
  if (answer.status === 200) return unreachable("the agent's answer ended without this claim's result");
  const ranNone = answer.status < 500 || reasonText(answer.text) === 'NoToken';
  return ranNone
    ? claimAnswerOf(answer)
    : unreachable(`POST /v1/claims answered ${answer.status}: the claims' outcome is unknown`);
}

/**
 * The answers of one batch's claims, each settled once: by its result line, or at the end of the call
 * (settleRest). A line that is unreadable, out of range, or for a claim already answered is ignored: its claim, if
 * any, is left to the end of the call, unknown.
 */
export class BatchResults {
  readonly answers: Array<Promise<ClaimAnswer>>;
  readonly #resolvers: Array<((answer: ClaimAnswer | Promise<ClaimAnswer>) => void) | undefined>;

  constructor(count: number) {
    this.#resolvers = [];
    this.answers = Array.from(
      { length: count },
      (_, i) => new Promise<ClaimAnswer>((resolve) => (this.#resolvers[i] = resolve)),
    );
  }

  line(text: string): void {
    const result = resultOf(jsonOf(text));
    if (result !== undefined && result.index < this.#resolvers.length)
      this.settle(result.index, claimAnswerOfJson(result.status, result.body));
  }

  settle(index: number, answer: ClaimAnswer | Promise<ClaimAnswer>): void {
    const resolve = this.#resolvers[index];
    this.#resolvers[index] = undefined;
    resolve?.(answer);
  }

  /** Every claim not answered yet gets `answer()`. */
  settleRest(answer: () => ClaimAnswer): void {
    this.#resolvers.forEach((resolve, index) => {
      if (resolve !== undefined) this.settle(index, answer());
    });
  }
}

/**
 * A result line (agentBatchClaimResultSchema; its rules restated for the common line, so it skips zod's generic
 * machinery, which decides the rest).
 */
function resultOf(json: unknown): AgentBatchClaimResult | undefined {
  if (typeof json === 'object' && json !== null) {
    const { index, status } = json as { index?: unknown; status?: unknown };
    if (
      Number.isSafeInteger(index) &&
      (index as number) >= 0 &&
      Number.isSafeInteger(status) &&
      (status as number) >= 100 &&
      (status as number) <= 599
    )
      return json as AgentBatchClaimResult;
  }
  const parsed = agentBatchClaimResultSchema.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}
