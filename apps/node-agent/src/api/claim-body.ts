// The claim body, validated on every claim. `agentClaimRequestSchema` (zod) stays
// the definition; this is a hand-written check of the same rules for the
// plain JSON a claim is, so the common valid body skips zod's generic
// machinery. It only ever accepts: whatever it does not accept goes to zod,
// which then accepts it or explains the refusal in its own words (zod counts
// string lengths in code points, this check in UTF-16 units, so a string of
// astral characters near a limit is zod's to judge). test/claim-body.test.ts
// checks that what it accepts, zod accepts with the same value.
import {
  agentClaimRequestSchema,
  CLAIM_FIELDS,
  DEFAULT_NET,
  DEFAULT_SIZE,
  isSandboxNet,
  isSandboxSize,
  KEY_PART_MAX_LENGTH,
  PRINTABLE_KEY_PART,
  type AgentClaimRequest,
} from '@warmpool/api';
import type { z } from 'zod';

// The schema's rules, restated: keyPart is a printable string of 1..253 chars; net and size are closed sets. A string
// within the limits in UTF-16 units is within them in code points too.
const CLAIM_REF_MAX = 512;

function isKeyPart(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length >= 1 &&
    value.length <= KEY_PART_MAX_LENGTH &&
    PRINTABLE_KEY_PART.test(value)
  );
}

/** The parsed claim when `json` is a valid claim body, else undefined (it may still be valid: ask zod). */
export function quickClaimRequest(json: unknown): AgentClaimRequest | undefined {
  return quickClaim(json, false);
}

/**
 * forwardedClaimJson of the claim when `json` is a body quickClaimRequest accepts, else undefined (ask zod), made in
 * one step: the claim is built with `no_redirect` in its place rather than copied to add it.
 */
export function quickForwardedClaimJson(json: unknown): string | undefined {
  const claim = quickClaim(json, true);
  return claim === undefined ? undefined : JSON.stringify(claim);
}

/** quickClaimRequest, with `no_redirect: true` whatever the body said of it when `forward`. */
function quickClaim(json: unknown, forward: boolean): AgentClaimRequest | undefined {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
  // A field warmpool does not support is zod's to word (strict: refused, never dropped).
  for (const field in json) if (!CLAIM_FIELDS.has(field)) return undefined;
  const {
    template,
    net,
    size,
    ttl_seconds: ttl,
    claim_ref: claimRef,
    no_redirect: noRedirect,
  } = json as Record<string, unknown>;
  if (!isKeyPart(template)) return undefined;
  // net and size are closed sets (sandboxd refuses any other value).
  if (net !== undefined && !(typeof net === 'string' && isSandboxNet(net))) return undefined;
  if (size !== undefined && !(typeof size === 'string' && isSandboxSize(size))) return undefined;
  // Keys in the schema's order, so the body forwarded to sandboxd is byte for byte what zod's output encodes to.
  const claim: AgentClaimRequest = { template, net: net ?? DEFAULT_NET, size: size ?? DEFAULT_SIZE };
  if (ttl !== undefined) {
    if (typeof ttl !== 'number' || !Number.isSafeInteger(ttl) || ttl < 0) return undefined;
    claim.ttl_seconds = ttl;
  }
  if (claimRef !== undefined) {
    if (typeof claimRef !== 'string' || claimRef.length < 1 || claimRef.length > CLAIM_REF_MAX) return undefined;
    claim.claim_ref = claimRef;
  }
  if (noRedirect !== undefined) {
    if (noRedirect !== true) return undefined;
    claim.no_redirect = true;
  } else if (forward) claim.no_redirect = true;
  return claim;
}

/** A drop-in for `agentClaimRequestSchema` where the body is read: same answers, valid bodies faster. */
export const claimBodySchema = {
  safeParse(json: unknown): z.ZodSafeParseResult<AgentClaimRequest> {
    const claim = quickClaimRequest(json);
    return claim !== undefined ? { success: true, data: claim } : agentClaimRequestSchema.safeParse(json);
  },
};

/**
 * The body the agent sends sandboxd for a validated claim: always with `no_redirect: true`. warmpool places
 * claims itself (the control plane chooses the node), so a node must serve a claim or refuse it, never answer
 * with peers to retry at (a redirect answer is a 200 that claimed nothing).
 */
export function forwardedClaimJson(claim: AgentClaimRequest): string {
  return claim.no_redirect === true ? JSON.stringify(claim) : JSON.stringify({ ...claim, no_redirect: true });
}
