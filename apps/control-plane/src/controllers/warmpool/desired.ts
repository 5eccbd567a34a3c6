// A node's desired warm-target set, in the one canonical order, with a
// signature for cheap comparison: equal sets, equal signatures.
//
// Both run once per node per reconcile (1 000 nodes: thousands of times a
// second during a fan-out), so neither builds a key id inside a sort
// comparator: ids are made once per entry, then sorted as plain strings.
import type { AgentPoolTarget, PoolOptions } from '@warmpool/api';
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

/**
 * Each node's desired set, kept while its spread targets (the same map: the
 * incremental spread hands back an untouched node's map as it was) and every
 * key's settings hold, so a run builds sets only for the nodes an event moved.
 */
export class DesiredSets {
  readonly #sets = new Map<string, { held: ReadonlyMap<string, number> | undefined; set: DesiredSet }>();
  #settingsSig = '';
  /** A plan's options are kept with the plan (PoolPlans), so each is serialised once. */
  readonly #optionsSigs = new WeakMap<PoolOptions, string>();

  /** Starts a run: a change of any key's settings (not its replicas) drops every set. */
  begin(demands: ReadonlyMap<string, KeyDemand>, nodes: Iterable<string>): void {
    let sig = '';
    for (const [keyId, demand] of demands) sig += `${keyId}${this.#optionsSig(demand.options)}\n`;
    if (sig !== this.#settingsSig) this.#sets.clear();
    this.#settingsSig = sig;
    const live = new Set(nodes);
    for (const name of this.#sets.keys()) if (!live.has(name)) this.#sets.delete(name);
  }

  #optionsSig(options: PoolOptions): string {
    let sig = this.#optionsSigs.get(options);
    if (sig === undefined) this.#optionsSigs.set(options, (sig = JSON.stringify(options)));
    return sig;
  }

  of(name: string, held: ReadonlyMap<string, number> | undefined, demands: ReadonlyMap<string, KeyDemand>): DesiredSet {
    const cached = this.#sets.get(name);
    if (cached !== undefined && cached.held === held && held !== undefined) return cached.set;
    const set = desiredSetOf(held, demands);
    this.#sets.set(name, { held, set });
    return set;
  }
}
