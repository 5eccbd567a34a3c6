// POST /v1/claims on the control plane's side: the envelope it sends, and
// each claim's ClaimAnswer read from the one answer, exactly as the claim's
// own POST /v1/claim answer would have been read.
import { agentBatchClaimResponseSchema, type AgentBatchClaimResult } from '@warmpool/api';
import { claimAnswerOf, claimAnswerOfJson, jsonOf, reasonText, type Answer, type ClaimAnswer } from './answers.js';

/** `{"claims":[…]}` around claim bodies that are JSON already (claimBody): no re-encoding. */
export function claimsEnvelope(bodies: readonly string[]): string {
  return `{"claims":[${bodies.join(',')}]}`;
}

/** Not a claim's answer at all: every item may or may not have been served, so each is asked for by claim_ref. */
export function unreachable(message: string): ClaimAnswer {
  return { ok: false, refusal: { kind: 'unreachable', message } };
}

/**
 * The answers of `count` claims sent as one POST /v1/claims (a 404 or 405 is the caller's: an agent without the
 * verb). A refused envelope (4xx, or 503 NoToken: the agent ran none of them) refuses every claim as the single verb
 * would have; any other failure, or a 200 that is not one result per claim, leaves every outcome unknown.
 */
export function batchClaimAnswers(answer: Answer, count: number): ClaimAnswer[] {
  if (answer.status !== 200) {
    const ranNone = answer.status < 500 || reasonText(answer.text) === 'NoToken';
    const unknown = `POST /v1/claims answered ${answer.status}: the claims' outcome is unknown`;
    return Array.from({ length: count }, () => (ranNone ? claimAnswerOf(answer) : unreachable(unknown)));
  }
  const json = jsonOf(answer.text);
  const results = quickResults(json) ?? resultsOf(json);
  if (results?.length !== count) {
    const unreadable = `unreadable POST /v1/claims answer: ${answer.text.slice(0, 200)}`;
    return Array.from({ length: count }, () => unreachable(unreadable));
  }
  return results.map((result) => claimAnswerOfJson(result.status, result.body));
}

function resultsOf(json: unknown): AgentBatchClaimResult[] | undefined {
  const parsed = agentBatchClaimResponseSchema.safeParse(json);
  return parsed.success ? parsed.data.results : undefined;
}

/**
 * The results when `json` plainly is a batch answer (agentBatchClaimResponseSchema's rules restated, so the common
 * answer skips zod's generic machinery); undefined leaves it to the schema.
 */
function quickResults(json: unknown): AgentBatchClaimResult[] | undefined {
  if (typeof json !== 'object' || json === null) return undefined;
  const { results } = json as { results?: unknown };
  if (!Array.isArray(results)) return undefined;
  for (const result of results as unknown[]) {
    if (typeof result !== 'object' || result === null) return undefined;
    const { status } = result as { status?: unknown };
    if (!Number.isSafeInteger(status) || (status as number) < 100 || (status as number) > 599) return undefined;
  }
  return results as AgentBatchClaimResult[];
}
