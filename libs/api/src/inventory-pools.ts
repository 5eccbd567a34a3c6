// sandboxd's pools (`GET /v1/info`) as a NodeInventory lists them: the same
// counts with the pool key's fields inline.
import type { InventoryPool } from './crds.js';
import type { NodeInfo } from './sandboxd.js';

/** The rows of `info.pools`, in sandboxd's order. */
export function inventoryPoolsOf(info: NodeInfo): InventoryPool[] {
  return info.pools.map((p) => ({
    template: p.key.template,
    net: p.key.net,
    size: p.key.size,
    target: p.target,
    warm: p.warm,
    refilling: p.refilling,
  }));
}
