// The create route's body, validated on every claim. `createClaimRequestSchema`
// (zod, libs/api) stays the definition; this is a hand-written check of the
// same rules for the plain JSON a claim body is, so the common valid body
// skips zod's generic machinery. It only ever accepts: whatever it does not
// accept goes to zod, which then accepts it or words the refusal (string
// limits are checked here in UTF-16 units, which never exceed zod's count,
// so anything near a limit in astral characters is zod's to judge).
// test/create-body.test.ts checks that what it accepts, zod accepts with the
// same value.
import {
  CLAIM_NAME_MAX,
  CLAIM_TARGET_MAX,
  createClaimRequestSchema,
  isDnsLabel,
  MAX_CLAIM_TTL_SECONDS,
  type CreateClaimRequest,
} from '@warmpool/api';
import type { BodySchema } from '@warmpool/runtime';

const FIELDS = new Set(['warmPool', 'env', 'scalingGroup', 'target', 'ttlSeconds', 'claimRef']);

function isName(value: unknown): value is string {
  return typeof value === 'string' && value.length >= 1 && value.length <= CLAIM_NAME_MAX;
}

/** The parsed body when `json` is a valid create body, else undefined (it may still be valid: ask zod). */
export function quickCreateClaimRequest(json: unknown): CreateClaimRequest | undefined {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
  // A field the API does not know is zod's to word (strict: refused, never dropped).
  for (const field in json) if (!FIELDS.has(field)) return undefined;
  const { warmPool, env, scalingGroup, target, ttlSeconds, claimRef } = json as Record<string, unknown>;
  const body: CreateClaimRequest = {};
  // Exactly one of warmPool and env; scalingGroup and target only with env.
  if (warmPool !== undefined) {
    if (env !== undefined || scalingGroup !== undefined || target !== undefined || !isName(warmPool)) return undefined;
    body.warmPool = warmPool;
  } else {
    if (!isName(env)) return undefined;
    body.env = env;
    if (scalingGroup !== undefined) {
      if (typeof scalingGroup !== 'string' || scalingGroup.length > CLAIM_NAME_MAX) return undefined;
      body.scalingGroup = scalingGroup;
    }
    if (target !== undefined) {
      if (typeof target !== 'string' || target.length < 1 || target.length > CLAIM_TARGET_MAX) return undefined;
      body.target = target;
    }
  }
  if (ttlSeconds !== undefined) {
    if (typeof ttlSeconds !== 'number' || !Number.isInteger(ttlSeconds)) return undefined;
    if (ttlSeconds < 1 || ttlSeconds > MAX_CLAIM_TTL_SECONDS) return undefined;
    body.ttlSeconds = ttlSeconds;
  }
  if (claimRef !== undefined) {
    if (!isDnsLabel(claimRef)) return undefined;
    body.claimRef = claimRef;
  }
  return body;
}

/** A drop-in for `createClaimRequestSchema` where the body is read: same answers, valid bodies faster. */
export const createClaimBodySchema: BodySchema<CreateClaimRequest> = {
  safeParse(json: unknown) {
    const body = quickCreateClaimRequest(json);
    return body !== undefined ? { success: true, data: body } : createClaimRequestSchema.safeParse(json);
  },
};
