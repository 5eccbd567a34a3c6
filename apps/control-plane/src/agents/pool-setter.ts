// The driver's port to the node agents: replace a node's whole warm-target
// set, or look at the node. The agent client (client.ts) implements it over
// HTTP; benchmarks and specs may put a fake at this process edge.
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
