// Reading the node agents' answers: tolerant of what a real sandboxd adds or
// omits (libs/api sandboxd-tolerant), never trusting a body's shape.
import {
  normalizeOwnerAddr,
  redirectAnswerSchema,
  tolerantClaimResponseSchema,
  type PoolKey,
  type TolerantClaimResponse,
} from '@warmpool/api';

/** What came back from one HTTP call to an agent. */
export interface Answer {
  status: number;
  text: string;
}

/** A claim a node served, as warmpool reads it. */
export interface NodeClaim {
  id: string;
  token: string;
  deadline: string;
  /** host:port (a URL the node answered is reduced to it); undefined when the node named none usable. */
  ownerAddr: string | undefined;
}

/** How a node answered a claim it did not serve. */
export type Refusal =
  /** 429: full, at max_claims or draining. Another node may take it. */
  | { kind: 'full'; status: number; message: string }
  /**
   * 200 `{"redirect": [...]}`: the node did not serve it and named peers (it ignored `no_redirect`). Nothing was
   * claimed there: like full, another node may take it, and there is nothing to look up.
   */
  | { kind: 'redirected'; status: number; message: string; candidates: string[] }
  /** Another status: the node refused (bad key, provisioning failed, ...). */
  | { kind: 'refused'; status: number; message: string }
  /** No answer in time, or the connection failed: the node MAY have served it. */
  | { kind: 'unreachable'; message: string };

export type ClaimAnswer = { ok: true; claim: NodeClaim } | { ok: false; refusal: Refusal };

/** The body of POST /v1/claim: warmpool places claims itself, so a node answers for itself, never with peers. */
export function claimBody(key: PoolKey, ttlSeconds: number, claimRef: string): string {
  return JSON.stringify({
    template: key.template,
    net: key.net,
    size: key.size,
    ttl_seconds: ttlSeconds,
    claim_ref: claimRef,
    no_redirect: true,
  });
}

export function claimAnswerOf(answer: Answer): ClaimAnswer {
  return claimAnswerOfJson(answer.status, jsonOf(answer.text), answer.text);
}

/** A claim's answer from its status and parsed body (`text`, when there is one, only words an unreadable grant). */
export function claimAnswerOfJson(status: number, json: unknown, text?: string): ClaimAnswer {
  if (status === 200) {
    // A redirect always has `redirect`; a grant is not parsed as one first (a failed parse is costly on every claim).
    const redirect = hasField(json, 'redirect') ? redirectAnswerSchema.safeParse(json) : undefined;
    if (redirect?.success === true) {
      const candidates = redirect.data.redirect;
      return {
        ok: false,
        refusal: {
          kind: 'redirected',
          status: 200,
          message: `the node did not serve the claim and named other nodes (${candidates.join(', ') || 'none'})`,
          candidates,
        },
      };
    }
    const grant = grantOf(json);
    if (grant !== undefined) {
      const { id, token, deadline, owner_addr: ownerAddr } = grant;
      return { ok: true, claim: { id, token, deadline, ownerAddr: normalizeOwnerAddr(ownerAddr) } };
    }
    // Served, but we cannot read what: ask the node by claim_ref, as after a timeout.
    const shown = text ?? JSON.stringify(json) ?? '';
    return { ok: false, refusal: { kind: 'unreachable', message: `unreadable claim answer: ${shown.slice(0, 200)}` } };
  }
  const message = stringField(json, 'error') ?? `HTTP ${status}`;
  // The agent sent it to sandboxd and got no answer (502/504 OutcomeUnknown): the node may have served it.
  if (stringField(json, 'reason') === 'OutcomeUnknown')
    return { ok: false, refusal: { kind: 'unreachable', message: `HTTP ${status}: ${message}` } };
  return { ok: false, refusal: { kind: status === 429 ? 'full' : 'refused', status, message } };
}

/** What warmpool reads of a grant (checked by hand in grantOf). */
const READ_FIELDS = ['id', 'token', 'deadline', 'owner_addr'] as const;
type GrantFields = Pick<TolerantClaimResponse, (typeof READ_FIELDS)[number]>;

/**
 * Fields the grant's schema checks but warmpool does not read: any of them present is zod's to judge. Taken from the
 * schema, so a field added there can never be waved through unchecked.
 */
const CHECKED_UNREAD = Object.keys(tolerantClaimResponseSchema.shape).filter(
  (field) => !(READ_FIELDS as readonly string[]).includes(field),
);

/**
 * The grant in a 200's body, or undefined when it is not one (tolerantClaimResponseSchema's verdict). The common
 * grant, with none of the optional fields but `owner_addr`, is checked by hand (zod's rules restated: what this
 * accepts, zod accepts with these values; test/agent-answers.test.ts); anything else is zod's to judge.
 */
export function grantOf(json: unknown): GrantFields | undefined {
  if (typeof json === 'object' && json !== null && !Array.isArray(json)) {
    const fields = json as Record<string, unknown>;
    const { id, token, deadline, owner_addr: ownerAddr } = fields;
    if (
      typeof id === 'string' &&
      id !== '' &&
      typeof token === 'string' &&
      token !== '' &&
      typeof deadline === 'string' &&
      (ownerAddr === undefined || typeof ownerAddr === 'string') &&
      !CHECKED_UNREAD.some((field) => fields[field] !== undefined)
    )
      return ownerAddr === undefined ? { id, token, deadline } : { id, token, deadline, owner_addr: ownerAddr };
  }
  const parsed = tolerantClaimResponseSchema.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}

export function jsonOf(text: string): unknown {
  try {
    return text === '' ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The `error` of an error body, if it has one. */
export function errorText(text: string): string | undefined {
  return stringField(jsonOf(text), 'error');
}

/** The machine-readable `reason` of an error body, if it has one. */
export function reasonText(text: string): string | undefined {
  return stringField(jsonOf(text), 'reason');
}

/** The generation a 409 says the agent has applied. */
export function appliedGenerationIn(text: string): number | undefined {
  const json = jsonOf(text);
  if (typeof json !== 'object' || json === null) return undefined;
  const applied = (json as { appliedGeneration?: unknown }).appliedGeneration;
  return typeof applied === 'number' && Number.isSafeInteger(applied) ? applied : undefined;
}

function hasField(json: unknown, field: string): boolean {
  return typeof json === 'object' && json !== null && field in json;
}

function stringField(json: unknown, field: string): string | undefined {
  if (typeof json !== 'object' || json === null) return undefined;
  const value = (json as Record<string, unknown>)[field];
  return typeof value === 'string' ? value : undefined;
}
