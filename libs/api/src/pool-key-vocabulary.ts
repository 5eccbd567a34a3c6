// The closed sets sandboxd knows for the pool key's `net` and `size`
// (cocoonstack/sandbox, docs/sandboxd-api.md: a claim or a PUT /v1/pools with
// any other value is refused with 400 "unknown template axis" — and a PUT is
// refused whole, so one bad pool would block every other pool of the node).
// warmpool refuses another value where a SandboxTemplate is read, so such a
// pool is reported on its own status and never reaches a node.

/** `net`: no network, or the egress lane. */
export const POOL_NETS = ['none', 'egress'] as const;
export type PoolNet = (typeof POOL_NETS)[number];

/** `size`: sandboxd's size tiers. */
export const POOL_SIZES = ['small', 'medium', 'large', 'xlarge', '2xlarge'] as const;
export type PoolSize = (typeof POOL_SIZES)[number];

export function isPoolNet(value: string): value is PoolNet {
  return (POOL_NETS as readonly string[]).includes(value);
}

export function isPoolSize(value: string): value is PoolSize {
  return (POOL_SIZES as readonly string[]).includes(value);
}
