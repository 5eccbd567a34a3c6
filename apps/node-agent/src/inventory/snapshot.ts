// A node's state as the inventory publishes it, and the rule for when a
// change is worth a write. Claims move `warm` and `claimed` all the time;
// writing each of them would put per-claim load on the apiserver, which the
// design forbids. Only changes a scheduler acts on are significant.
import {
  inventoryPoolsOf,
  poolKeyId,
  type InventoryPool,
  type NodeInfo,
  type NodeInventoryStatus,
} from '@warmpool/api';
import type { PublishedEntries } from './entries.js';

export interface InventorySnapshot {
  /** Sorted by pool key, so equal states compare (and serialize) equal. */
  pools: InventoryPool[];
  claimed: number;
  draining: boolean;
  atCapacity: boolean;
  appliedGeneration: number | undefined;
  /** Where the node's sandboxes are reached (host:port), once known. */
  ownerAddr: string | undefined;
}

function poolId(pool: InventoryPool): string {
  return poolKeyId(pool);
}

/**
 * `claimedByKey` (pool key id → claimed sandboxes), when given, adds each
 * pool's claimed count: what SandboxEnv status shows as running.
 */
export function snapshotOf(
  info: NodeInfo,
  appliedGeneration: number | undefined,
  claimedByKey?: ReadonlyMap<string, number>,
  ownerAddr?: string,
): InventorySnapshot {
  const pools = inventoryPoolsOf(info)
    .map((pool): InventoryPool =>
      claimedByKey === undefined ? pool : { ...pool, claimed: claimedByKey.get(poolKeyId(pool)) ?? 0 },
    )
    .sort((a, b) => (poolId(a) < poolId(b) ? -1 : poolId(a) > poolId(b) ? 1 : 0));
  return {
    pools,
    claimed: info.claimed,
    draining: info.draining === true,
    atCapacity: info.at_capacity === true,
    appliedGeneration,
    ownerAddr,
  };
}

/**
 * Why `next` must be published although `published` already was, or
 * undefined when the difference can wait for the slow cadence: a pool
 * appeared, retired or changed target; a pool's warm reached or left 0;
 * draining or at-capacity flipped; a new generation was applied; the owner
 * address was learned or changed (a replica adopting one of the node's claims
 * needs it, and it changes about never).
 */
export function significantChange(
  published: InventorySnapshot | undefined,
  next: InventorySnapshot,
): string | undefined {
  if (published === undefined) return 'first publish';
  if (published.draining !== next.draining) return next.draining ? 'draining started' : 'draining lifted';
  if (published.atCapacity !== next.atCapacity)
    return next.atCapacity ? 'node at capacity' : 'node no longer at capacity';
  if (published.appliedGeneration !== next.appliedGeneration) return `generation ${next.appliedGeneration} applied`;
  if (published.ownerAddr !== next.ownerAddr) return `owner address ${next.ownerAddr ?? 'unknown'}`;
  const before = new Map(published.pools.map((p) => [poolId(p), p]));
  if (before.size !== next.pools.length) return 'pool set changed';
  for (const pool of next.pools) {
    const old = before.get(poolId(pool));
    if (old === undefined) return 'pool set changed';
    if (old.target !== pool.target) return `target of ${poolId(pool)} changed`;
    if ((old.warm === 0) !== (pool.warm === 0))
      return pool.warm === 0 ? `${poolId(pool)} ran out of warm sandboxes` : `${poolId(pool)} has warm sandboxes again`;
  }
  return undefined;
}

/**
 * The status written to the NodeInventory. Fields are always present, so server-side apply never leaves a stale one
 * behind.
 */
export function statusOf(
  snapshot: InventorySnapshot,
  publishedAt: Date,
  capacity: number | undefined,
  entries?: PublishedEntries,
): NodeInventoryStatus {
  const status: NodeInventoryStatus = {
    pools: snapshot.pools,
    claimed: snapshot.claimed,
    draining: snapshot.draining,
    atCapacity: snapshot.atCapacity,
    publishedAt: publishedAt.toISOString(),
  };
  if (capacity !== undefined) status.capacity = capacity;
  if (snapshot.appliedGeneration !== undefined) status.appliedGeneration = snapshot.appliedGeneration;
  // Once known it is in every write: a server-side apply without it would drop it.
  if (snapshot.ownerAddr !== undefined) status.ownerAddr = snapshot.ownerAddr;
  // Absent when sandboxd's list could not be read: readers then know nothing of which sandboxes are gone.
  if (entries !== undefined) {
    status.entries = entries.entries;
    status.entriesTruncated = entries.truncated;
  }
  return status;
}
