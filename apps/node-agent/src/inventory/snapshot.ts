// A node's state as the inventory publishes it, and the rule for when a
// change is worth a write. Claims move `warm` and `claimed` all the time;
// writing each of them would put per-claim load on the apiserver, which the
// design forbids. Only changes a scheduler acts on are significant, and of
// those, what a push told its own sender waits for the next write (urgentChange).
import {
  epochOfGeneration,
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
 * Why `next` is worth a write although `published` already was, or undefined
 * when the difference can wait for the slow cadence (urgentChange applies it
 * to all but what a push told its own sender): a pool
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
 * Why `next` must be published soon, or undefined when it can wait for the
 * next write (the publish interval's, or one an urgent change brings).
 *
 * A push within the epoch of the generation last published (a later round of
 * the same leader term) waits: its new generation and the targets it set are
 * what its sender asked for and read back in the push's answer, and no other
 * reader acts on them soon. The inventory's readers act on warm counts
 * reaching or leaving 0 (claim placement, SandboxEnv counts), draining,
 * capacity and the pool set; a new term reads the nodes' targets once, when
 * it starts. A generation of a new epoch (a new leader term's first push) is
 * published soon: it is the floor a restarted agent reads back, so that it
 * refuses a deposed leader's pushes (all of an older epoch) for good, and
 * what a new term's epoch is taken above should the epoch record be lost
 * (only the epoch counts there). Within one epoch a restarted agent that
 * reads back an older generation of it refuses nothing it should: every
 * generation of an epoch comes from one leader, and its pushes to a node only
 * grow (control plane: pushers.ts, generation.ts). Targets that change while
 * the generation does not were set by no push, and epoch 0 is no leader's:
 * both published soon.
 */
export function urgentChange(published: InventorySnapshot | undefined, next: InventorySnapshot): string | undefined {
  if (published === undefined) return significantChange(published, next);
  return significantChange(published, withoutPushNews(published, next));
}

/**
 * No leader takes epoch 0 (the control plane's epochs start at 1): its generations come from hand pushes and the
 * reset to 0, not from one leader, so they are published soon.
 */
const LEADERLESS_EPOCH = 0;

/** `next` with what a push of the published generation's epoch moved (its generation, its targets) as published. */
function withoutPushNews(published: InventorySnapshot, next: InventorySnapshot): InventorySnapshot {
  const before = published.appliedGeneration;
  const after = next.appliedGeneration;
  if (before === undefined || after === undefined || before === after) return next;
  const epoch = epochOfGeneration(before);
  if (epoch === LEADERLESS_EPOCH || epochOfGeneration(after) !== epoch) return next;
  const targets = new Map(published.pools.map((pool) => [poolId(pool), pool.target]));
  return {
    ...next,
    appliedGeneration: before,
    pools: next.pools.map((pool) => {
      const target = targets.get(poolId(pool));
      return target === undefined || target === pool.target ? pool : { ...pool, target };
    }),
  };
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
