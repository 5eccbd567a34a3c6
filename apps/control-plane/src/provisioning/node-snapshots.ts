// The nodes placement may use, from what every replica has: the NodeInventory
// cache. On the leader, the warm-pool driver also holds each agent's latest
// SetPools / GET /v1/info answer (fresher than the inventory) and knows which
// nodes keep failing; where it has a view, that view wins. Read-only: nothing
// here changes the driver's records.
import { poolKeyId, type InventoryPool, type NodeInventory } from '@warmpool/api';
import type { Lister } from '@warmpool/kube';
import type { Clock } from '../clock.js';
import type { NodeView } from '../controllers/warmpool/nodes.js';
import type { NodeSnapshot } from './placement.js';

export interface NodeSnapshotSourceOptions {
  inventories: Lister<NodeInventory>;
  /** The driver's views (empty on a replica that does not drive). */
  driverViews: () => readonly NodeView[];
  /** An inventory not republished for this long is not used (the driver's --stale-after). */
  staleAfterMs: number;
  clock: Clock;
}

export function nodeSnapshotSource(options: NodeSnapshotSourceOptions): () => NodeSnapshot[] {
  return () => {
    const views = new Map<string, NodeView>();
    for (const view of options.driverViews()) views.set(view.name, view);
    const now = options.clock.now();
    const nodes: NodeSnapshot[] = [];
    for (const inventory of options.inventories.list()) {
      const name = inventory.metadata?.name;
      if (name === undefined || name === '') continue;
      const view = views.get(name);
      if (view !== undefined) {
        if (!view.eligible || view.observation === undefined) continue;
        const o = view.observation;
        nodes.push(snapshot(name, view.address, `${o.source}@${o.at}`, o.pools, o.claimed, inventory.status?.capacity, o.draining));
        continue;
      }
      const status = inventory.status ?? {};
      const address = inventory.spec?.address ?? '';
      const published = Date.parse(status.publishedAt ?? '');
      if (address === '' || !Number.isFinite(published) || now - published > options.staleAfterMs) continue;
      nodes.push(snapshot(name, address, `inventory@${status.publishedAt ?? ''}`, status.pools ?? [], status.claimed ?? 0, status.capacity, status.draining === true));
    }
    return nodes.filter((node) => node.address !== '');
  };
}

function snapshot(
  name: string,
  address: string,
  stamp: string,
  pools: readonly InventoryPool[],
  claimed: number,
  capacity: number | undefined,
  draining: boolean,
): NodeSnapshot {
  const warm = new Map<string, number>();
  let used = claimed;
  for (const pool of pools) {
    warm.set(poolKeyId(pool), draining ? 0 : pool.warm);
    used += pool.warm + pool.refilling;
  }
  const coldRoom = draining ? 0 : capacity === undefined || capacity < 0 ? Infinity : Math.max(0, capacity - used);
  return { name, address, stamp, warm, claimed, coldRoom };
}
