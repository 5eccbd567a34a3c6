// What the control-plane replicas hand each other through Redis for claims:
// a batch job (one BullMQ job per closed batch of one pool), its reply, the
// progress a worker records before calling nodes, and the claim index record.
// Every replica validates what it reads with these schemas.
import { z } from 'zod';
import { CLAIM_FAILURE_REASONS, claimTierSchema } from './claims.js';
import { poolKeySchema } from './sandboxd.js';

/** The front doors a claim comes through; each is its own key space in the claim index. */
export const claimDoorSchema = z.enum(['crd', 'http', 'fed']);

/** One claim of a batch. */
export const batchClaimSchema = z.object({
  claimRef: z.string().min(1),
  ttlSeconds: z.number().int().min(1),
  door: claimDoorSchema,
  /**
   * The owner's mark (see node-claim-ref.ts): a SandboxClaim's uid, the HTTP owner digest, or the peer id (door 'fed':
   * its claims are also scoped by it).
   */
  owner: z.string().min(1),
  /** The front door made the claimRef up: nobody can come back for the sandbox if the answer is lost. */
  generated: z.boolean(),
});
export type BatchClaim = z.output<typeof batchClaimSchema>;

/** The data of one batch job. */
export const batchJobSchema = z.object({
  /** The replica whose caller waits: the reply goes to its reply list. */
  replyTo: z.string().min(1),
  namespace: z.string().min(1),
  warmPool: z.string().min(1),
  key: poolKeySchema,
  /** Epoch ms: past it the caller has given up (a Timeout); the worker still serves what it started. */
  deadline: z.number(),
  /** Epoch ms (with a fraction) when the job was queued, for the claim stage metrics. */
  queuedAt: z.number().optional(),
  claims: z.array(batchClaimSchema).min(1),
});
export type BatchJob = z.output<typeof batchJobSchema>;

/** A node a batch job asked (or is about to ask) for a claim, and why it chose it. */
export const triedNodeSchema = z.object({
  node: z.string(),
  address: z.string(),
  tier: claimTierSchema,
  /** Epoch ms when the claim was sent to it: until that call's timeout has passed, the node may still be serving it. */
  at: z.number(),
  /**
   * Epoch ms until which the node may still serve it, when it differs from `at` plus the warm-claim timeout: a cold
   * placement's longer deadline, or a call that timed out (the node may be booting the claim cold and serve it later).
   */
  until: z.number().optional(),
});
export type TriedNode = z.output<typeof triedNodeSchema>;

/** The nodes a job has asked per claimRef, written before asking (a retried job asks them first). */
export const batchProgressSchema = z.object({ tried: z.record(z.string(), z.array(triedNodeSchema)) });
export type BatchProgress = z.output<typeof batchProgressSchema>;

/**
 * A served claim as the index keeps it (with the sandbox's token: the index lives only in the control plane's Redis).
 */
export const claimRecordSchema = z.object({
  id: z.string().min(1),
  token: z.string(),
  deadline: z.string(),
  ownerAddr: z.string(),
  node: z.string().min(1),
  namespace: z.string().min(1),
  warmPool: z.string(),
  claimRef: z.string().min(1),
  tier: claimTierSchema,
  /** The front door that claimed it, and the owner's mark (see batchClaimSchema). */
  door: claimDoorSchema,
  owner: z.string().min(1),
  /** With door 'fed': the peer that owns it. */
  peer: z.string().min(1).optional(),
  /** Set when a peer cluster serves the claim (an Env claim that spilled): renew and release go to it. */
  cluster: z.string().min(1).optional(),
  /**
   * The sandboxd pool key it was claimed under, so a Sandbox shows it before its node publishes it; absent in records
   * written before it was kept, and for a spilled claim (the peer's key).
   */
  key: poolKeySchema.optional(),
});
export type ClaimRecord = z.output<typeof claimRecordSchema>;

export const claimOutcomeSchema = z.discriminatedUnion('ok', [
  z.object({
    ok: z.literal(true),
    claimRef: z.string(),
    grant: claimRecordSchema,
    /**
     * True when a node claim was made for this job's own reservation, for the first of the claimRef's positions in
     * the job; absent when it answers a claim served before, or one this run only found (a replay, or not known).
     */
    fresh: z.literal(true).optional(),
  }),
  z.object({
    ok: z.literal(false),
    claimRef: z.string(),
    reason: z.enum(CLAIM_FAILURE_REASONS),
    message: z.string(),
    retryAfterSeconds: z.number().optional(),
  }),
]);
export type ClaimOutcome = z.output<typeof claimOutcomeSchema>;

/** The outcome of the claim at `index` in the job's `claims`. */
export const indexedOutcomeSchema = claimOutcomeSchema.and(z.object({ index: z.number().int().min(0) }));
export type IndexedOutcome = z.output<typeof indexedOutcomeSchema>;

/**
 * What a worker pushes onto the reply list of `replyTo`: some of a job's
 * outcomes, as they become final (a job answers over several replies; a job
 * run twice may answer a claim twice, the same way: the first answer counts).
 */
export const batchReplySchema = z.object({
  jobId: z.string().min(1),
  outcomes: z.array(indexedOutcomeSchema),
});
export type BatchReply = z.output<typeof batchReplySchema>;

/**
 * One change of the claim index, appended to its event stream (a Redis
 * stream whose entry id orders changes and dates them on Redis's clock):
 * every replica's Sandbox view follows it to show a claim before its node
 * publishes it. `claimed` carries the record (token left out); `released`
 * names the sandbox that went.
 */
export const claimEventSchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('claimed'), record: claimRecordSchema.omit({ token: true }) }),
  z.object({
    op: z.literal('released'),
    namespace: z.string().min(1),
    claimRef: z.string().min(1),
    id: z.string().min(1),
  }),
]);
export type ClaimEvent = z.output<typeof claimEventSchema>;
