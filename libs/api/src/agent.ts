// The node agent's own additions to the sandboxd contract. Everything else the
// agent serves has sandboxd's shapes (./sandboxd.ts).
import { z } from 'zod';
import type { ResourceType } from './meta.js';
import { poolTargetListSchema, type PoolTarget } from './sandboxd.js';

/**
 * `PUT /v1/pools` on the agent: sandboxd's body plus the control plane's
 * generation. A push whose generation is below the last applied one answers
 * 409 and changes nothing, so a reordered retry or a deposed leader can never
 * roll a node back. Equal generations are idempotent re-pushes.
 */
export const agentSetPoolsRequestSchema = z.object({
  generation: z.number().int().min(0),
  pools: poolTargetListSchema,
});
export type AgentSetPoolsRequest = z.output<typeof agentSetPoolsRequestSchema>;

/** The 409 body for a stale generation. */
export interface StaleGenerationBody {
  error: string;
  appliedGeneration: number;
}

// Re-export kept for branches in flight; use StaleGenerationBody (StaleGenerationError is the control plane's Error class)
export type StaleGenerationError = StaleGenerationBody;

export type { PoolTarget };

/**
 * The core Node kind, which the agent reads only to point its NodeInventory's
 * owner reference at it (so the inventory is garbage-collected with its node).
 */
export const KubeNodeType: ResourceType = {
  group: '', version: 'v1', plural: 'nodes', kind: 'Node', namespaced: false,
};
