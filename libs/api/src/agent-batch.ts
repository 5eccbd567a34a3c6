// POST /v1/claims at the node agent: several claims in one request, each
// item's result streamed back as soon as it is answered (one NDJSON line per
// item, in the order they finish), so a claim that boots cold on the node
// holds back no other. Each item is exactly the body of POST /v1/claim and is
// judged on its own (agentClaimRequestSchema); the envelope only carries
// them, so one bad item gets its own 400 result while the others are served.
import { z } from 'zod';
import { agentClaimRequestSchema } from './agent-strict.js';

/** The most claims one POST /v1/claims may carry. */
export const MAX_BATCH_CLAIMS = 256;

const claims = <T extends z.ZodType>(item: T) =>
  z.array(item).min(1, 'at least one claim').max(MAX_BATCH_CLAIMS, `at most ${MAX_BATCH_CLAIMS} claims in one batch`);

/**
 * The envelope as the agent reads it: items are left for the claim schema, one by one. A malformed envelope is one
 * 400 for the whole request, and nothing is claimed.
 */
export const agentBatchClaimEnvelopeSchema = z.object({ claims: claims(z.unknown()) }).strict();

/** The request as documented (OpenAPI): every item a POST /v1/claim body. */
export const agentBatchClaimRequestSchema = z.object({ claims: claims(agentClaimRequestSchema) }).strict();
export type AgentBatchClaimRequest = z.output<typeof agentBatchClaimRequestSchema>;

/**
 * One line of the 200 answer (`application/x-ndjson`): an item's position in the request, the status POST /v1/claim
 * would have answered and its JSON body (sandboxd's grant or error as it came; a body that is not JSON as a string;
 * no body as null). Every item gets exactly one line; the answer ends after the last.
 */
export const agentBatchClaimResultSchema = z.object({
  index: z
    .number()
    .int()
    .min(0)
    .max(MAX_BATCH_CLAIMS - 1),
  status: z.number().int().min(100).max(599),
  body: z.unknown(),
});
export type AgentBatchClaimResult = z.output<typeof agentBatchClaimResultSchema>;

/** The media type of POST /v1/claims's 200 answer: one agentBatchClaimResultSchema per line. */
export const BATCH_CLAIM_RESULTS_MEDIA_TYPE = 'application/x-ndjson';
