// The node agent's own additions to the sandboxd contract. Everything else the
// agent serves has sandboxd's shapes (./sandboxd.ts).
import { z } from 'zod';
import type { KubeObject, ResourceType } from './meta.js';
import { poolTargetListSchema, type PoolTarget } from './sandboxd.js';

/**
 * The largest generation a control plane issues (epoch 2^32−1, counter
 * 2^21−1): Number.MAX_SAFE_INTEGER, so a generation is exact in JSON and JS.
 * The NodeInventory CRD bounds status.appliedGeneration to it too.
 */
export const MAX_GENERATION = Number.MAX_SAFE_INTEGER;

/**
 * `PUT /v1/pools` on the agent: sandboxd's body plus the control plane's
 * generation. A push whose generation is below the last applied one answers
 * 409 and changes nothing, so a reordered retry or a deposed leader can never
 * roll a node back. Equal generations are idempotent re-pushes.
 */
export const agentSetPoolsRequestSchema = z.object({
  generation: z.number().int().min(0).max(MAX_GENERATION),
  pools: poolTargetListSchema,
});
export type AgentSetPoolsRequest = z.output<typeof agentSetPoolsRequestSchema>;

/** The 409 body for a stale generation. */
export interface StaleGenerationError {
  error: string;
  appliedGeneration: number;
}

export type { PoolTarget };

/**
 * The core Node kind. The agent reads it to point its NodeInventory's owner
 * reference at it (so the inventory is garbage-collected with its node); the
 * control plane reads its addresses, the only ones it pushes to.
 */
export const KubeNodeType: ResourceType = {
  group: '', version: 'v1', plural: 'nodes', kind: 'Node', namespaced: false,
};

/** The slice of a core/v1 Node warmpool reads. */
export interface KubeNode extends KubeObject {
  status?: { addresses?: Array<{ type: string; address: string }> };
}

/** The core Pod kind: the control plane reads the node agents' own pods (their IPs and nodes). */
export const KubePodType: ResourceType = {
  group: '', version: 'v1', plural: 'pods', kind: 'Pod', namespaced: true,
};

/** The slice of a core/v1 Pod warmpool reads. */
export interface KubePod extends KubeObject {
  spec?: { nodeName?: string };
  status?: { phase?: string; podIP?: string; podIPs?: Array<{ ip: string }> };
}
