// What each SandboxWarmPool has right now, from the NodeInventory cache: one
// pass over the inventories' pool rows and one over the pools, never a look
// at a sandbox. Pure.
//
// Pools whose templates name the same sandboxd key share one node-level pool;
// the nodes cannot tell them apart, so the key's counts are handed out in ref
// order, each pool taking up to its own replicas and the last what is left
// (the rule SandboxWarmPool status follows too).
import { poolKeyId, type NodeInventory, type SandboxTemplate, type SandboxWarmPool } from '@warmpool/api';
import { isDriven, poolKeyOf } from '@warmpool/pool-model';

/** One sandboxd key's counts summed over the fresh, non-draining nodes. */
export interface KeyCounts {
  warm: number;
  refilling: number;
  claimed: number;
}

/** A pool's share: what SandboxEnv status and the federation record carry per member. */
export interface PoolCounts {
  /** Warm sandboxes: a claim is served at once. */
  idle: number;
  /** Claimed sandboxes still running. */
  running: number;
  /** Being booted to refill. */
  pending: number;
  /** spec.replicas. */
  desired: number;
}

/**
 * Pool key id → counts over the inventories published within `staleAfterMs`
 * of `now` (a node that stopped publishing, or is draining, serves nothing).
 */
export function observeKeys(
  inventories: Iterable<NodeInventory>,
  now: number,
  staleAfterMs: number,
): Map<string, KeyCounts> {
  const keys = new Map<string, KeyCounts>();
  for (const inventory of inventories) {
    const status = inventory.status;
    if (status === undefined || status.draining === true) continue;
    const published = Date.parse(status.publishedAt ?? '');
    if (!Number.isFinite(published) || now - published > staleAfterMs) continue;
    for (const pool of status.pools ?? []) {
      const id = poolKeyId(pool);
      const row = keys.get(id) ?? { warm: 0, refilling: 0, claimed: 0 };
      row.warm += Math.max(0, pool.warm);
      row.refilling += Math.max(0, pool.refilling);
      row.claimed += Math.max(0, pool.claimed ?? 0);
      keys.set(id, row);
    }
  }
  return keys;
}

export function refOf(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** `namespace/name` → the pool's counts, for every pool (a pool not driven by warmpool has only `desired`). */
export function countPools(
  pools: readonly SandboxWarmPool[],
  templateOf: (namespace: string, name: string) => SandboxTemplate | undefined,
  keys: ReadonlyMap<string, KeyCounts>,
): Map<string, PoolCounts> {
  const out = new Map<string, PoolCounts>();
  const byKey = new Map<string, Array<{ ref: string; replicas: number }>>();
  for (const pool of pools) {
    const namespace = pool.metadata?.namespace ?? '';
    const name = pool.metadata?.name ?? '';
    if (name === '' || pool.metadata?.deletionTimestamp !== undefined) continue;
    const ref = refOf(namespace, name);
    const replicas = Math.max(0, pool.spec?.replicas ?? 1);
    out.set(ref, { idle: 0, running: 0, pending: 0, desired: replicas });
    const template = templateOf(namespace, pool.spec?.sandboxTemplateRef?.name ?? '');
    if (template === undefined || !isDriven(template)) continue;
    let keyId: string;
    try {
      keyId = poolKeyId(poolKeyOf(template));
    } catch {
      continue; // an invalid template keeps nothing warm; its pool's status says why
    }
    const group = byKey.get(keyId);
    if (group === undefined) byKey.set(keyId, [{ ref, replicas }]);
    else group.push({ ref, replicas });
  }
  for (const [keyId, group] of byKey) {
    const counts = keys.get(keyId);
    if (counts === undefined) continue;
    group.sort((a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0));
    const idle = shareOut(counts.warm, group);
    const pending = shareOut(counts.refilling, group);
    const running = shareOut(counts.claimed, group);
    group.forEach(({ ref }, i) => {
      const row = out.get(ref);
      if (row === undefined) return;
      row.idle = idle[i] ?? 0;
      row.pending = pending[i] ?? 0;
      row.running = running[i] ?? 0;
    });
  }
  return out;
}

/** Each pool up to its replicas, in order; the last one takes what is left. */
function shareOut(total: number, group: ReadonlyArray<{ replicas: number }>): number[] {
  let left = total;
  return group.map(({ replicas }, i) => {
    const share = i === group.length - 1 ? left : Math.min(replicas, left);
    left -= share;
    return share;
  });
}
