// Generated from libs/api/src/claims.ts by scripts/sync-api.mjs (npm run sync-api): do not edit here.
// The claim API (docs/claim-api.md): every body the control
// plane's HTTP claim API accepts or answers, and the reasons a claim fails,
// which the SandboxClaim controller writes into the Ready condition too.
import { z } from 'zod';

/** `ttlSeconds` when the client sends none. */
export const DEFAULT_CLAIM_TTL_SECONDS = 300;
/** The longest lease a claim may ask for. */
export const MAX_CLAIM_TTL_SECONDS = 86_400;

/** A DNS label's characters: [a-z0-9-], starting and ending with a letter or digit. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_LABEL_MAX = 63;

/** A DNS label: it can also name the sandbox in Kubernetes. */
export const claimRefSchema = z
  .string()
  .min(1)
  .max(DNS_LABEL_MAX)
  .regex(
    DNS_LABEL,
    'must be a DNS label: at most 63 characters of [a-z0-9-], starting and ending with a letter or digit',
  );

/**
 * A DNS label (RFC 1123), claimRefSchema's verdict without zod: a namespace in a path, and what X-Sandbox-ID and
 * X-Sandbox-Namespace must be (as upstream's router checks).
 */
export function isDnsLabel(value: unknown): value is string {
  return typeof value === 'string' && value.length <= DNS_LABEL_MAX && DNS_LABEL.test(value);
}

const ttlSecondsSchema = z.number().int().min(1).max(MAX_CLAIM_TTL_SECONDS);

/** The longest pool or Env name (and scaling group) a claim may name, and the longest `target`. */
export const CLAIM_NAME_MAX = 253;
export const CLAIM_TARGET_MAX = 512;

const nameSchema = z.string().min(1).max(CLAIM_NAME_MAX);

/**
 * `POST /v1/namespaces/{ns}/claims`: from one pool (`warmPool`), or from a
 * SandboxEnv (`env`, optionally one of its scaling groups), which the router
 * may serve from another cluster. `target` (`<cluster>::<pool>`) pins an Env
 * claim to one member pool of this cluster: only a peer cluster forwarding a
 * claim sends it, with its own peer token.
 */
export const createClaimRequestSchema = z
  .strictObject({
    warmPool: nameSchema.optional(),
    env: nameSchema.optional(),
    scalingGroup: z.string().max(CLAIM_NAME_MAX).optional(),
    target: z.string().min(1).max(CLAIM_TARGET_MAX).optional(),
    ttlSeconds: ttlSecondsSchema.optional(),
    claimRef: claimRefSchema.optional(),
  })
  .superRefine((body, ctx) => {
    if ((body.warmPool === undefined) === (body.env === undefined))
      ctx.addIssue({ code: 'custom', message: 'give exactly one of warmPool and env' });
    if (body.env === undefined && (body.scalingGroup !== undefined || body.target !== undefined))
      ctx.addIssue({ code: 'custom', message: 'scalingGroup and target go only with env' });
  });
export type CreateClaimRequest = z.output<typeof createClaimRequestSchema>;

/**
 * Sent (value `1`) by a peer cluster forwarding a claim whose claimRef its own
 * front door generated: the serving cluster then releases a sandbox it serves
 * after the forward gave up. Heeded only with a peer cluster's token.
 */
export const CLAIMREF_GENERATED_HEADER = 'x-warmpool-claimref-generated';

/** `POST /v1/namespaces/{ns}/claims/{id}/renew`. */
export const renewClaimRequestSchema = z.strictObject({ ttlSeconds: ttlSecondsSchema.optional() });
export type RenewClaimRequest = z.output<typeof renewClaimRequestSchema>;

export const claimTierSchema = z.enum(['warm', 'cold']);

/** The claim as answered by `POST` (with `token`) and `GET` (without). */
export const claimBodySchema = z.object({
  id: z.string(),
  token: z.string().optional(),
  deadline: z.string(),
  ownerAddr: z.string(),
  node: z.string(),
  namespace: z.string(),
  warmPool: z.string(),
  claimRef: z.string(),
  tier: claimTierSchema,
  /** Env claims: the cluster that serves the claim (this one or a peer). */
  cluster: z.string().optional(),
  /** Env claims: the member pool that serves it (also in `warmPool`). */
  memberPool: z.string().optional(),
});
export type ClaimBody = z.output<typeof claimBodySchema>;

export const renewClaimResponseSchema = z.object({ deadline: z.string() });
export type RenewClaimResponse = z.output<typeof renewClaimResponseSchema>;

/** Why a claim request failed: the `reason` of an error body, and of a SandboxClaim's Ready=False. */
export const CLAIM_FAILURE_REASONS = [
  'BadRequest',
  'Unauthenticated',
  'Forbidden',
  'PoolNotFound',
  'EnvNotFound',
  'NotDriven',
  'ClaimNotFound',
  // The claimRef is live for another owner (identity, pool or env): nothing of it is shown.
  'ClaimRefInUse',
  'NoCapacity',
  'NodeRefused',
  'Expired',
  'Unavailable',
  'Timeout',
  // HTTP only: the path exists, the method does not (the answer's Allow lists the ones that do).
  'MethodNotAllowed',
  // HTTP only: no such path.
  'NotFound',
] as const;
export type ClaimFailureReason = (typeof CLAIM_FAILURE_REASONS)[number];

/** Every error the claim API answers. */
export const claimErrorBodySchema = z.object({ error: z.string(), reason: z.enum(CLAIM_FAILURE_REASONS) });
export type ClaimErrorBody = z.output<typeof claimErrorBodySchema>;
