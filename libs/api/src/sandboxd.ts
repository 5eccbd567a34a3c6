// The sandboxd HTTP contract (shared/specs/sandboxd-api.md): the one home of
// every body sandboxd accepts or answers. fake-sandboxd serves these shapes,
// the node agent validates and forwards them, the control plane reads them.
import { z } from 'zod';

export const DEFAULT_NET = 'none';
export const DEFAULT_SIZE = 'small';
/** sandboxd's default lease when a claim asks for 0 or nothing. */
export const DEFAULT_TTL_SECONDS = 300;
/** No lease is granted beyond 24 h. */
export const MAX_TTL_SECONDS = 24 * 60 * 60;
/** Bodies over this answer 400 `invalid request body`. */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * What a pool key component (an image reference, a net, a size) may hold:
 * printable characters only. No whitespace or separators (U+2028 included),
 * no control characters (C0, DEL, C1), no format characters (zero-width,
 * bidi overrides), no private-use code points and no lone surrogates: each
 * can make one key print like another, or like nothing, in logs, Events and
 * /metrics labels (two lone surrogates both encode to U+FFFD there, so two
 * keys became one series).
 */
export const PRINTABLE_KEY_PART = /^[^\s\p{Z}\p{Cc}\p{Cf}\p{Co}\p{Cs}]+$/u;
export const KEY_PART_MAX_LENGTH = 253;

/** A pool key component: non-empty, at most 253 characters, printable. */
const keyPart = z
  .string()
  .min(1)
  .max(KEY_PART_MAX_LENGTH)
  .regex(PRINTABLE_KEY_PART, 'must be printable: no whitespace, control or format characters, or lone surrogates');

export const poolKeySchema = z.object({
  template: keyPart,
  net: keyPart.default(DEFAULT_NET),
  size: keyPart.default(DEFAULT_SIZE),
});
/** A node-local warm pool is identified by (template, net, size). */
export type PoolKey = z.output<typeof poolKeySchema>;

/** A stable string form of a pool key, for maps and metric labels. */
export function poolKeyId(key: PoolKey): string {
  return `${key.template}|${key.net}|${key.size}`;
}

export const poolTargetSchema = z
  .object({
    template: keyPart,
    net: keyPart.default(DEFAULT_NET),
    size: keyPart.default(DEFAULT_SIZE),
    warm: z.number().int().min(0, 'warm must not be negative'),
    warm_max: z.number().int().min(0).optional(),
  })
  .refine((p) => p.warm_max === undefined || p.warm_max >= p.warm, {
    message: 'warm_max must not be below warm',
    path: ['warm_max'],
  });
export type PoolTarget = z.output<typeof poolTargetSchema>;

function noDuplicateKeys(pools: readonly PoolTarget[], ctx: z.RefinementCtx): void {
  const seen = new Set<string>();
  pools.forEach((p, i) => {
    const id = poolKeyId(p);
    if (seen.has(id)) ctx.addIssue({ code: 'custom', message: `duplicate pool key ${id}`, path: [i] });
    seen.add(id);
  });
}

/** A whole warm-target set: no key twice. */
export const poolTargetListSchema = z.array(poolTargetSchema).superRefine(noDuplicateKeys);

/** `PUT /v1/pools`: the node's whole desired warm-target set. */
export const setPoolsRequestSchema = z.object({ pools: poolTargetListSchema });
export type SetPoolsRequest = z.output<typeof setPoolsRequestSchema>;

export const poolInfoSchema = z.object({
  key: z.object({ template: z.string(), net: z.string(), size: z.string() }),
  warm: z.number().int(),
  refilling: z.number().int(),
  target: z.number().int(),
  golden: z.boolean().optional(),
});
export type PoolInfo = z.output<typeof poolInfoSchema>;

/** `GET /v1/info`, and the answer of pools and drain calls. */
export const nodeInfoSchema = z.object({
  pools: z.array(poolInfoSchema),
  claimed: z.number().int(),
  draining: z.boolean().optional(),
  at_capacity: z.boolean().optional(),
  at_capacity_reason: z.string().optional(),
  /**
   * Where this sandboxd's sandboxes are reached (host:port, the `owner_addr` of its claim answers), when it says so:
   * not every sandboxd does. Loose here so an odd value never hides the rest of the info; `ownerAddrSchema` judges it.
   */
  owner_addr: z.string().optional(),
});
export type NodeInfo = z.output<typeof nodeInfoSchema>;

/** `POST /v1/claim`. */
export const claimRequestSchema = z.object({
  template: keyPart,
  net: keyPart.default(DEFAULT_NET),
  size: keyPart.default(DEFAULT_SIZE),
  ttl_seconds: z.number().int().min(0).optional(),
  claim_ref: z.string().min(1).max(512).optional(),
});
export type ClaimRequest = z.output<typeof claimRequestSchema>;

export const claimResponseSchema = z.object({
  id: z.string(),
  token: z.string(),
  deadline: z.string(),
  owner_addr: z.string(),
});
export type ClaimResponse = z.output<typeof claimResponseSchema>;

/** `POST /v1/sandboxes/{id}/renew`. */
export const renewRequestSchema = z.object({
  ttl_seconds: z.number().int().min(0).optional(),
});
export type RenewRequest = z.output<typeof renewRequestSchema>;

export const renewResponseSchema = z.object({ deadline: z.string() });
export type RenewResponse = z.output<typeof renewResponseSchema>;

export const sandboxRowSchema = z.object({
  id: z.string(),
  key: z.object({ template: z.string(), net: z.string(), size: z.string() }),
  deadline: z.string(),
  claimed_at: z.string(),
  claim_ref: z.string().optional(),
  /** Only on `GET /v1/sandboxes/{id}` with the root token. */
  token: z.string().optional(),
});
export type SandboxRow = z.output<typeof sandboxRowSchema>;

export const sandboxListSchema = z.object({ sandboxes: z.array(sandboxRowSchema) });
export type SandboxList = z.output<typeof sandboxListSchema>;

export const errorBodySchema = z.object({ error: z.string() });
export type ErrorBody = z.output<typeof errorBodySchema>;

/** The exact message sandboxd answers for an oversized or unparsable body. */
export const INVALID_BODY_MESSAGE = 'invalid request body';

/**
 * Clamp a requested lease to sandboxd's rules: 0/absent = the node's default
 * (300 s unless the node is configured otherwise), capped at 24 h.
 */
export function effectiveTtlSeconds(
  requested: number | undefined,
  defaultSeconds: number = DEFAULT_TTL_SECONDS,
): number {
  const seconds = requested === undefined || requested <= 0 ? defaultSeconds : requested;
  return Math.min(seconds, MAX_TTL_SECONDS);
}
