// The sandboxd HTTP contract (docs/sandboxd.md): the one home of every body
// sandboxd accepts or answers. fake-sandboxd serves these shapes, the node
// agent validates and forwards them, the control plane reads them.
//
// Two rules. Answers parse tolerantly: the real daemon adds fields from
// release to release (volumes, tenant, metadata, ...), so an answer schema
// keeps the fields warmpool knows, strips the rest, and requires only what
// warmpool depends on. Requests warmpool sends are checked as strictly as the
// daemon checks them, so a body the daemon would refuse is refused here first.
import { z } from 'zod';

export const DEFAULT_NET = 'none';
export const DEFAULT_SIZE = 'small';

/** The closed `net` axis of a pool key: no NIC, or a NIC on the node's egress attachment. */
export const SANDBOX_NETS = ['none', 'egress'] as const;
export type SandboxNet = (typeof SANDBOX_NETS)[number];
/** The closed `size` axis of a pool key (the daemon's T-shirt tiers). */
export const SANDBOX_SIZES = ['small', 'medium', 'large', 'xlarge', '2xlarge'] as const;
export type SandboxSize = (typeof SANDBOX_SIZES)[number];

export function isSandboxNet(value: string): value is SandboxNet {
  return (SANDBOX_NETS as readonly string[]).includes(value);
}
export function isSandboxSize(value: string): value is SandboxSize {
  return (SANDBOX_SIZES as readonly string[]).includes(value);
}
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

// The output stays `string` (not the literal union) so code that builds keys from strings keeps compiling; the set is
// still closed: anything else is refused as the daemon refuses it (400 `invalid pool key: unknown net shape`).
const netPart = keyPart.refine((v): boolean => isSandboxNet(v), {
  message: `unknown net shape: want one of ${SANDBOX_NETS.join(', ')}`,
});
const sizePart = keyPart.refine((v): boolean => isSandboxSize(v), {
  message: `unknown size: want one of ${SANDBOX_SIZES.join(', ')}`,
});

/** A pool key as it is read (a template, an inventory): any printable net and size, judged where it is sent. */
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

const poolTargetFields = {
  template: keyPart,
  net: netPart.default(DEFAULT_NET),
  size: sizePart.default(DEFAULT_SIZE),
  warm: z.number().int().min(0, 'warm must not be negative'),
  /** Ceiling of the demand-adaptive target; 0 or absent = no ceiling above `warm`. */
  warm_max: z.number().int().min(0).optional(),
  /** Hibernate a claimed sandbox idle this long; 0 or absent = never. Refused on egress pools. */
  idle_hibernate_seconds: z.number().int().min(0, 'idle_hibernate_seconds must not be negative').optional(),
  /** Archive a hibernated sandbox (checkpoint to the store, drop the VM) after this long; must exceed idle. */
  archive_after_seconds: z.number().int().min(0, 'archive seconds must not be negative').optional(),
  /** Delete an archived sandbox after this long in the store; 0 = keep. */
  archive_delete_after_seconds: z.number().int().min(0, 'archive seconds must not be negative').optional(),
};

interface PoolLimits {
  net: string;
  warm: number;
  warm_max?: number | undefined;
  idle_hibernate_seconds?: number | undefined;
  archive_after_seconds?: number | undefined;
}

/** The daemon's own bounds of one pool entry (the same for its config file and PUT /v1/pools). */
function poolLimits(p: PoolLimits, ctx: z.RefinementCtx): void {
  if (p.warm_max !== undefined && p.warm_max !== 0 && p.warm_max < p.warm)
    ctx.addIssue({ code: 'custom', message: 'warm_max must not be below warm', path: ['warm_max'] });
  const idle = p.idle_hibernate_seconds ?? 0;
  if (p.net === 'egress' && idle > 0)
    ctx.addIssue({
      code: 'custom',
      message: 'idle_hibernate_seconds is not supported for egress pools',
      path: ['idle_hibernate_seconds'],
    });
  const archiveAfter = p.archive_after_seconds ?? 0;
  if (archiveAfter > 0 && (idle <= 0 || archiveAfter <= idle))
    ctx.addIssue({
      code: 'custom',
      message: 'archive_after_seconds requires idle_hibernate_seconds > 0 and a larger value',
      path: ['archive_after_seconds'],
    });
}

/** One entry of `PUT /v1/pools`; unknown fields are dropped (the shape warmpool forwards). */
export const poolTargetSchema = z.object(poolTargetFields).superRefine(poolLimits);
/** One entry as the daemon decodes it: an unknown field is a 400, never silently dropped. */
export const strictPoolTargetSchema = z.strictObject(poolTargetFields).superRefine(poolLimits);
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

/**
 * `PUT /v1/pools` decoded as the daemon decodes it: unknown fields anywhere are refused (a mistyped key must not
 * silently change a target), and the whole set is judged before any of it applies.
 */
export const strictSetPoolsRequestSchema = z.strictObject({
  pools: z.array(strictPoolTargetSchema).superRefine(noDuplicateKeys),
});

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
  /** Claims whose VM is hibernated, and claims archived to the store; both are counted in `claimed` too. */
  hibernated: z.number().int().optional(),
  archived: z.number().int().optional(),
  /** The other mesh members' data-plane addresses (absent or empty: a node alone). */
  peers: z.array(z.string()).optional(),
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
  net: netPart.default(DEFAULT_NET),
  size: sizePart.default(DEFAULT_SIZE),
  ttl_seconds: z.number().int().min(0).optional(),
  claim_ref: z.string().min(1).max(512).optional(),
  /** Set on a retry at a redirect target: the node must warm-or-provision itself, never redirect again. */
  no_redirect: z.boolean().optional(),
  /** Copied from a redirect that carried it: the target may serve only a promoted template, never a cold boot. */
  require_promoted: z.boolean().optional(),
});
export type ClaimRequest = z.output<typeof claimRequestSchema>;

/** One volume a claim attached, as the daemon echoes it (warmpool claims none; read only to be tolerated). */
export const claimedVolumeSchema = z.object({
  name: z.string(),
  mount: z.string().optional(),
  mode: z.string().optional(),
});

/**
 * A `POST /v1/claim` answer that hands a sandbox over. `owner_addr` is absent on a daemon without an advertise
 * address, host:port otherwise, or a full origin (`https://node.example:8443`) when the daemon sets
 * `client_advertise`.
 */
export const claimGrantSchema = z.object({
  id: z.string().min(1),
  token: z.string().min(1),
  deadline: z.string(),
  owner_addr: z.string().optional(),
  /** The promoted-template export the sandbox was cloned from; absent for pools and cold boots. */
  template_digest: z.string().optional(),
  /** The checkpoint a branched claim was born from. */
  from_checkpoint: z.string().optional(),
  /** How the guest reaches the network (`relay`, `direct`, `none`), on daemons that say. */
  net_route: z.string().optional(),
  volumes: z.array(claimedVolumeSchema).optional(),
});
export type ClaimGrant = z.output<typeof claimGrantSchema>;

/**
 * A `POST /v1/claim` answer (status 200) that hands nothing over: retry the same body with `no_redirect: true` at
 * each address in turn, carrying `require_promoted: true` when the redirect has it. Sent by a mesh member on a warm
 * miss while a peer holds warm sandboxes of the key, when a peer owns the template, or at max_claims.
 */
export const claimRedirectSchema = z.object({
  redirect: z.array(z.string().min(1)).min(1),
  require_promoted: z.boolean().optional(),
});
export type ClaimRedirect = z.output<typeof claimRedirectSchema>;

/** Every 200 answer of `POST /v1/claim`: a grant or a redirect, never both. */
export const claimAnswerSchema = z.union([claimRedirectSchema, claimGrantSchema]);
export type ClaimAnswer = ClaimGrant | ClaimRedirect;

export function isClaimRedirect(answer: ClaimAnswer): answer is ClaimRedirect {
  return 'redirect' in answer;
}

/**
 * A grant that names its owner (host:port). Kept for code that needs `owner_addr`; a daemon without an advertise
 * address answers grants without it, which this refuses: read claims with `claimGrantSchema`.
 */
export const claimResponseSchema = claimGrantSchema.extend({ owner_addr: z.string() });
export type ClaimResponse = z.output<typeof claimResponseSchema>;

/** `POST /v1/sandboxes/{id}/renew`. */
export const renewRequestSchema = z.object({
  ttl_seconds: z.number().int().min(0).optional(),
});
export type RenewRequest = z.output<typeof renewRequestSchema>;

export const renewResponseSchema = z.object({ deadline: z.string() });
export type RenewResponse = z.output<typeof renewResponseSchema>;

/**
 * One row of `GET /v1/sandboxes` (and `GET /v1/sandboxes/{id}`) as the daemon answers it. `claimed_at` is absent for
 * a claim recorded before the field existed; `claim_ref` is what the claim was made under.
 */
export const sandboxdRowSchema = z.object({
  id: z.string(),
  key: z.object({ template: z.string(), net: z.string(), size: z.string() }),
  deadline: z.string(),
  claimed_at: z.string().optional(),
  claim_ref: z.string().optional(),
  /** The VM is hibernated (its memory snapshotted); the next access restores it. */
  hibernated: z.boolean().optional(),
  /** Checkpointed to the store with the local VM dropped; `deadline` is then the store's retention. */
  archived: z.boolean().optional(),
  /** The tenant that claimed it; absent for the root token. */
  tenant: z.string().optional(),
  from_checkpoint: z.string().optional(),
  /** Free-form labels of the claim, on daemons that record them. */
  metadata: z.record(z.string(), z.unknown()).optional(),
  volumes: z.array(claimedVolumeSchema).optional(),
  /** Only on `GET /v1/sandboxes/{id}` with the configured root token. */
  token: z.string().optional(),
});
export type SandboxdRow = z.output<typeof sandboxdRowSchema>;

export const sandboxdListSchema = z.object({ sandboxes: z.array(sandboxdRowSchema) });
export type SandboxdList = z.output<typeof sandboxdListSchema>;

/**
 * A row that carries `claimed_at`. Kept for code that orders or ages claims by it; a daemon can answer rows without
 * it, which this refuses: read rows with `sandboxdRowSchema`.
 */
export const sandboxRowSchema = sandboxdRowSchema.extend({ claimed_at: z.string() });
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
