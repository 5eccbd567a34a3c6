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
 * A generation is `epoch · 2^GENERATION_COUNTER_BITS + counter`: the epoch is
 * taken once per leadership term, the counter counts that term's push rounds,
 * so one epoch's generations all come from one leader (the control plane's
 * README, "generations").
 */
export const GENERATION_COUNTER_BITS = 21;

/** The leadership epoch a generation was issued in. */
export function epochOfGeneration(generation: number): number {
  return Math.floor(generation / 2 ** GENERATION_COUNTER_BITS);
}

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
export interface StaleGenerationBody {
  error: string;
  reason: 'StaleGeneration';
  appliedGeneration: number;
}

export type { PoolTarget };

/**
 * The core Node kind. The agent reads it to point its NodeInventory's owner
 * reference at it (so the inventory is garbage-collected with its node); the
 * control plane reads its addresses, the only ones it pushes to.
 */
export const KubeNodeType: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'nodes',
  kind: 'Node',
  namespaced: false,
};

/** The slice of a core/v1 Node warmpool reads. */
export interface KubeNode extends KubeObject {
  status?: { addresses?: Array<{ type: string; address: string }> };
}

/** The core Pod kind: the control plane reads the node agents' own pods (their IPs and nodes). */
export const KubePodType: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'pods',
  kind: 'Pod',
  namespaced: true,
};

/** The slice of a core/v1 Pod warmpool reads. */
export interface KubePod extends KubeObject {
  spec?: { nodeName?: string };
  status?: { phase?: string; podIP?: string; podIPs?: Array<{ ip: string }> };
}

/**
 * Why the agent itself refused or failed a call: the `reason` of every error
 * body the agent writes (answers sandboxd gave are passed through as they
 * came, with sandboxd's own `{"error"}` only).
 *
 * The upstream reasons say whether a retry is safe: `SandboxdUnreachable`
 * and `SandboxdBusy` mean the call never reached sandboxd (retry, after
 * Retry-After); `OutcomeUnknown` means it was sent and no answer came, so a
 * claim may have happened: look it up with `GET /v1/sandboxes?claim_ref=`
 * before claiming again.
 */
export const AGENT_ERROR_REASONS = [
  /** 400: the body is not JSON. */
  'InvalidBody',
  /** 400 (sandboxd's status and wording for it): the body is over 1 MiB; the connection is closed after the answer. */
  'BodyTooLarge',
  /** 400: the body or a parameter fails the schema. */
  'BadRequest',
  /** 400: the body carries a field warmpool does not support (refused, never silently dropped). */
  'UnsupportedField',
  /** 401: no bearer token, or not one this call accepts. */
  'Unauthenticated',
  /** 404: no such path. */
  'NotFound',
  /** 405: the path exists, not with this method (`Allow` lists the ones it has). */
  'MethodNotAllowed',
  /** 409: SetPools older than the applied generation. */
  'StaleGeneration',
  /** 429: the agent already has its limit of claims in flight to sandboxd. */
  'TooManyClaimsInFlight',
  /** 503: no fleet token is configured; the agent is fail-closed. */
  'NoToken',
  /** 503: the applied generation is not known yet (read back from the NodeInventory after a restart). */
  'GenerationNotRecovered',
  /** 503: `/readyz` only. */
  'NotReady',
  /** 503: sandboxd could not be connected to; the call was never sent. */
  'SandboxdUnreachable',
  /** 503: no connection to sandboxd came free before the deadline; the call was never sent. */
  'SandboxdBusy',
  /** 502 (connection lost) or 504 (no answer in time): the call was sent, and may have taken effect. */
  'OutcomeUnknown',
  /** 500 */
  'Internal',
] as const;
export type AgentErrorReason = (typeof AGENT_ERROR_REASONS)[number];

/** Every error the agent answers of its own. */
export const agentErrorBodySchema = z.object({ error: z.string(), reason: z.enum(AGENT_ERROR_REASONS) }).loose();
export type AgentErrorBody = z.output<typeof agentErrorBodySchema>;
