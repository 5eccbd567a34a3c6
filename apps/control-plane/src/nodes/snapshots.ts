// The nodes placement may use, from what every replica has: the NodeInventory
// cache. On the leader, the warm-pool driver also holds each agent's latest
// SetPools / GET /v1/info answer and knows which nodes keep failing: where it
// has a view, it decides whether the node is usable, and the counts are the
// newer of its agent's answer and the inventory (a push answer right after a
// new target says "0 warm" until the next probe, while the node may have
// republished since). Read-only: nothing here changes the driver's records.
// Agent answers are timed on this process's clock and inventories on the
// node's, so "newer" assumes clocks within a second or so of each other.
import { poolKeyId, type InventoryPool, type NodeInventory } from '@warmpool/api';
import type { Lister } from '@warmpool/kube';
import type { Clock } from '@warmpool/runtime';
import type { AddressCheck } from './addresses.js';
import type { NodeView } from './tracker.js';

/** One node as the latest report shows it. */
export interface NodeSnapshot {
  name: string;
  /** The agent's host:port. */
  address: string;
  /**
   * Changes whenever the counts below come from a newer report; what was taken since the last one is then forgotten.
   */
  stamp: string;
  /** Warm sandboxes per pool key id. */
  warm: ReadonlyMap<string, number>;
  claimed: number;
  /** Sandboxes the node can still boot cold (capacity − warm − claimed − refilling); Infinity when unknown. */
  coldRoom: number;
}

export interface NodeSnapshotSourceOptions {
  inventories: Lister<NodeInventory>;
  /** The driver's views (empty on a replica that does not drive). */
  driverViews: () => readonly NodeView[];
  /**
   * Whether a node's own Node object vouches for its inventory's address (the driver's rule, node-addresses.ts):
   * where the driver has no view, a claim carrying the fleet token goes only to a vouched-for address.
   */
  addresses: () => AddressCheck;
  /** An inventory not republished for this long is not used (the driver's --stale-after). */
  staleAfterMs: number;
  clock: Clock;
}

export function nodeSnapshotSource(options: NodeSnapshotSourceOptions): () => NodeSnapshot[] {
  return () => {
    const views = new Map<string, NodeView>();
    for (const view of options.driverViews()) views.set(view.name, view);
    const now = options.clock.now();
    let check: AddressCheck | undefined;
    const nodes: NodeSnapshot[] = [];
    for (const inventory of options.inventories.list()) {
      const name = inventory.metadata?.name;
      if (name === undefined || name === '') continue;
      const status = inventory.status ?? {};
      const published = Date.parse(status.publishedAt ?? '');
      const view = views.get(name);
      if (view !== undefined) {
        // The driver decides whether the node is usable; the counts come from its agent's answer unless the inventory
        // is newer.
        if (!view.eligible) continue;
        const o = view.observation;
        if (o !== undefined && o.source === 'agent' && !(published > o.at)) {
          nodes.push(snapshot(name, view.address, `agent@${o.at}`, o.pools, o.claimed, status.capacity, o.draining));
          continue;
        }
        nodes.push(
          snapshot(
            name,
            view.address,
            `inventory@${status.publishedAt ?? ''}`,
            status.pools ?? [],
            status.claimed ?? 0,
            status.capacity,
            status.draining === true,
          ),
        );
        continue;
      }
      const address = inventory.spec?.address ?? '';
      if (address === '' || !Number.isFinite(published) || now - published > options.staleAfterMs) continue;
      check ??= options.addresses();
      if (check(name, address) !== undefined) continue;
      nodes.push(
        snapshot(
          name,
          address,
          `inventory@${status.publishedAt ?? ''}`,
          status.pools ?? [],
          status.claimed ?? 0,
          status.capacity,
          status.draining === true,
        ),
      );
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
