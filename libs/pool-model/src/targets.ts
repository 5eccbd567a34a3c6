// The shapes a spread reads and writes. Targets are sparse: a node's map holds
// only the pools it keeps warm, so 1 000 pools × 1 000 nodes costs what the
// placed targets cost, not a million cells.

/** What one pool asks for: `id` is usually poolKeyId(key) from @warmpool/api. */
export interface PoolDemand {
  readonly id: string;
  /** Warm sandboxes wanted across the cluster: a non-negative integer. */
  readonly replicas: number;
}

/** A node as the spread sees it. */
export interface SpreadNode {
  readonly name: string;
  /**
   * How many warm sandboxes it can hold in total across all pools: capacity
   * minus claimed (see nodeRoom). Infinity when unknown; negative counts as 0.
   */
  readonly room: number;
  /** false keeps the node out of the spread (draining, stale inventory, cordoned). Default true. */
  readonly eligible?: boolean;
}

/** node name → pool id → warm target. Only targets > 0 are present. */
export type Targets = ReadonlyMap<string, ReadonlyMap<string, number>>;

export interface Spread {
  /** One entry per eligible node, in name order, possibly empty; an absent node should hold no warm targets. */
  readonly targets: Targets;
  /** pool id → replicas placed, for every pool asked for. */
  readonly placed: ReadonlyMap<string, number>;
  /** pool id → replicas that found no room anywhere; only pools with some. */
  readonly unplaced: ReadonlyMap<string, number>;
}
