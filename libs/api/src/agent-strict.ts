// The node agent's request bodies, strictly: a field warmpool does not
// support is refused with 400 `UnsupportedField`, never silently dropped
// (sandboxd would otherwise never see what the caller asked for, and the
// caller would never know). What warmpool supports beyond ./sandboxd.ts's
// contract: the pool options of ./pool-options.ts in PUT /v1/pools, and
// `no_redirect: true` in a claim (the agent sets it anyway).
import { z } from 'zod';
import { MAX_GENERATION } from './agent.js';
import { claimRequestSchema, poolKeyId, poolKeySchema, renewRequestSchema } from './sandboxd.js';

const seconds = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/**
 * One pool of the agent's PUT /v1/pools, strictly: an unknown field (sandboxd's config-owned `egress` / `warmup`, a
 * typo) is refused, never dropped. sandboxd's own rules are checked here too, so a bad pool is refused by the
 * agent with a clear reason rather than by sandboxd for the whole set.
 */
export const agentPoolTargetSchema = z
  .strictObject({
    template: poolKeySchema.shape.template,
    net: poolKeySchema.shape.net,
    size: poolKeySchema.shape.size,
    warm: z.number().int().min(0, 'warm must not be negative'),
    warm_max: z.number().int().min(0).optional(),
    idle_hibernate_seconds: seconds.optional(),
    archive_after_seconds: seconds.optional(),
    archive_delete_after_seconds: seconds.optional(),
  })
  .superRefine((p, ctx) => {
    if (p.warm_max !== undefined && p.warm_max < p.warm)
      ctx.addIssue({ code: 'custom', message: 'warm_max must not be below warm', path: ['warm_max'] });
    if (p.idle_hibernate_seconds !== undefined && p.idle_hibernate_seconds > 0 && p.net === 'egress')
      ctx.addIssue({
        code: 'custom',
        message: 'an egress pool does not hibernate',
        path: ['idle_hibernate_seconds'],
      });
    if (
      p.archive_after_seconds !== undefined &&
      p.archive_after_seconds > 0 &&
      p.archive_after_seconds <= (p.idle_hibernate_seconds ?? 0)
    )
      ctx.addIssue({
        code: 'custom',
        message: 'archive_after_seconds must be above idle_hibernate_seconds',
        path: ['archive_after_seconds'],
      });
  });

/** The agent's PUT /v1/pools body, strictly: sandboxd's body plus the generation, no other field, no key twice. */
export const agentSetPoolsStrictSchema = z.strictObject({
  generation: z.number().int().min(0).max(MAX_GENERATION),
  pools: z.array(agentPoolTargetSchema).superRefine((pools, ctx) => {
    const seen = new Set<string>();
    pools.forEach((p, i) => {
      const id = poolKeyId(p);
      if (seen.has(id)) ctx.addIssue({ code: 'custom', message: `duplicate pool key ${id}`, path: [i] });
      seen.add(id);
    });
  }),
});
export type AgentSetPoolsStrict = z.output<typeof agentSetPoolsStrictSchema>;

/**
 * A claim at the agent: sandboxd's contract and `no_redirect: true` (warmpool places claims itself; the agent sets it
 * anyway), nothing else: sandboxd's `volumes`, `volumes_attach_only` and `require_promoted` are not supported.
 */
export const agentClaimRequestSchema = claimRequestSchema
  .omit({ require_promoted: true })
  .extend({ no_redirect: z.literal(true, 'warmpool places claims itself: only true').optional() })
  .strict();
export type AgentClaimRequest = z.output<typeof agentClaimRequestSchema>;

/** A renew at the agent: `ttl_seconds` only. */
export const agentRenewRequestSchema = renewRequestSchema.strict();

/** The fields of a claim the agent takes (for the claim path's quick check). */
export const CLAIM_FIELDS: ReadonlySet<string> = new Set(Object.keys(agentClaimRequestSchema.shape));

/**
 * The fields a refusal names when `error` is about fields the schema does not know (zod's `unrecognized_keys`), with
 * where they are; undefined when it is about something else.
 */
export function unsupportedFieldsIn(error: z.ZodError): { path: string; fields: string[] } | undefined {
  const issue = error.issues.find((i) => i.code === 'unrecognized_keys');
  if (issue === undefined || issue.code !== 'unrecognized_keys') return undefined;
  return { path: issue.path.map(String).join('.'), fields: issue.keys };
}

/** The 400 message for fields warmpool does not support. */
export function unsupportedFieldsMessage(fields: readonly string[]): string {
  return `unsupported field${fields.length === 1 ? '' : 's'} ${fields.join(', ')}: warmpool does not support ${
    fields.length === 1 ? 'it' : 'them'
  } (refused, never dropped)`;
}
