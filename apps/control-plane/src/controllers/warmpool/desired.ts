// A node's desired warm-target set, in the one canonical order, with a
// signature for cheap comparison: equal sets, equal signatures.
//
// Both run once per node per reconcile (1 000 nodes: thousands of times a
// second during a fan-out), so neither builds a key id inside a sort
// comparator: ids are made once per entry, then sorted as plain strings.
import type { AgentPoolTarget } from '@warmpool/api';
import type { KeyDemand } from './plan.js';

export interface DesiredSet {
  /** Sorted by pool key id; only targets > 0 (a key left out drains on the node). */
  pools: AgentPoolTarget[];
  sig: string;
}

/** `held` is keyed by pool key id (the spread's targets for one node). */
export function desiredSetOf(
  held: ReadonlyMap<string, number> | undefined,
  demands: ReadonlyMap<string, KeyDemand>,
): DesiredSet {
  const ids: string[] = [];
  for (const [keyId, warm] of held ?? []) if (warm > 0 && demands.has(keyId)) ids.push(keyId);
  ids.sort();
  const pools: AgentPoolTarget[] = [];
  let sig = '';
  for (const keyId of ids) {
    const { key, options } = demands.get(keyId) as KeyDemand;
    const warm = held?.get(keyId) as number;
    const pool: AgentPoolTarget = { template: key.template, net: key.net, size: key.size, warm, ...options };
    // warm_max is a cap above the node's share: never below it (sandboxd refuses warm_max < warm for the whole PUT).
    if (pool.warm_max !== undefined && pool.warm_max < warm) pool.warm_max = warm;
    pools.push(pool);
    const entry = optionsSig(pool) === '' ? `${keyId}=${warm}` : `${keyId}=${warm}${optionsSig(pool)}`;
    sig += sig === '' ? entry : `;${entry}`;
  }
  return { pools, sig };
}

/** The options part of a pool's signature ('' when it has none, so sets without options keep their old signatures). */
function optionsSig(pool: AgentPoolTarget): string {
  let sig = '';
  if (pool.warm_max !== undefined) sig += `,max=${pool.warm_max}`;
  if (pool.idle_hibernate_seconds !== undefined) sig += `,hib=${pool.idle_hibernate_seconds}`;
  if (pool.archive_after_seconds !== undefined) sig += `,arc=${pool.archive_after_seconds}`;
  if (pool.archive_delete_after_seconds !== undefined) sig += `,del=${pool.archive_delete_after_seconds}`;
  return sig;
}
