// The boundary between the driver and the node agents: replace a node's whole
// warm-target set, or look at the node. The HTTP implementation is in
// http-pool-setter.ts; tests and benchmarks may put anything else behind it.
import type { NodeInfo, PoolTarget } from '@warmpool/api';

/** A node agent as the driver addresses it: the NodeInventory's name and spec.address. */
export interface AgentNode {
  name: string;
  /** host:port of the agent. */
  address: string;
}

export interface CallOptions {
  /** Aborts the call and every retry of it (leadership lost, shutting down). */
  signal?: AbortSignal;
  /** Asked right before each attempt; false ends the call with NotLeadingError and sends nothing. */
  proceed?(): boolean;
}

export interface PoolSetter {
  /** `PUT /v1/pools`: the node's whole desired set, stamped with `generation`. Answers the node's fresh info. */
  setPools(node: AgentNode, generation: number, pools: readonly PoolTarget[], options?: CallOptions): Promise<NodeInfo>;
  /** `GET /v1/info`: one attempt, no retry (it is the periodic probe). */
  info(node: AgentNode, options?: CallOptions): Promise<NodeInfo>;
  /** Drops whatever is kept for an address no node uses any more (connections). */
  forget?(address: string): void;
  close(): Promise<void>;
}

/** The agent has applied a later generation than the one pushed (409): nothing changed on the node. */
export class StaleGenerationError extends Error {
  override name = 'StaleGenerationError';
  readonly appliedGeneration: number;

  constructor(node: string, generation: number, appliedGeneration: number) {
    super(`node ${node} refused generation ${generation}: it has applied ${appliedGeneration}`);
    this.appliedGeneration = appliedGeneration;
  }
}

/** A call that got no usable answer. `status` is the HTTP status when there was one. */
export class AgentCallError extends Error {
  override name = 'AgentCallError';
  readonly node: string;
  readonly status: number | undefined;
  /** Worth another attempt: network errors, timeouts, 5xx, 429. */
  readonly retriable: boolean;

  constructor(node: string, message: string, options: { status?: number; retriable: boolean; cause?: unknown }) {
    super(`node ${node}: ${message}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.node = node;
    this.status = options.status;
    this.retriable = options.retriable;
  }
}

/** The caller no longer leads (CallOptions.proceed said so): nothing was sent. */
export class NotLeadingError extends Error {
  override name = 'NotLeadingError';
}

/** No fleet token: the driver is fail-closed and never calls an agent unauthenticated. */
export class NoTokenError extends Error {
  override name = 'NoTokenError';
}
