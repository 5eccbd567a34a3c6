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
  return setOf(held, demands, entryOf);
}

/** One pool of a set: its target and its part of the signature. */
interface Entry {
  pool: AgentPoolTarget;
  sig: string;
}

function entryOf(keyId: string, warm: number, demand: KeyDemand): Entry {
  const { key, options } = demand;
  const pool: AgentPoolTarget = { template: key.template, net: key.net, size: key.size, warm, ...options };
  // warm_max is a cap above the node's share: never below it (sandboxd refuses warm_max < warm for the whole PUT).
  if (pool.warm_max !== undefined && pool.warm_max < warm) pool.warm_max = warm;
  const settings = optionsSig(pool);
  return { pool, sig: settings === '' ? `${keyId}=${warm}` : `${keyId}=${warm}${settings}` };
}

function setOf(
  held: ReadonlyMap<string, number> | undefined,
  demands: ReadonlyMap<string, KeyDemand>,
  entry: (keyId: string, warm: number, demand: KeyDemand) => Entry,
): DesiredSet {
  const ids: string[] = [];
  for (const [keyId, warm] of held ?? []) if (warm > 0 && demands.has(keyId)) ids.push(keyId);
  ids.sort();
  const pools: AgentPoolTarget[] = [];
  let sig = '';
  for (const keyId of ids) {
    const made = entry(keyId, held?.get(keyId) as number, demands.get(keyId) as KeyDemand);
    pools.push(made.pool);
    sig += sig === '' ? made.sig : `;${made.sig}`;
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
  /**
   * keyId → warm → its entry, shared by every node holding that many of that key (a fan-out gives most nodes the same
   * few counts): the sets' pools are never changed once made. Dropped with the sets when any key's settings change.
   */
  readonly #entries = new Map<string, Map<number, Entry>>();
  readonly #entry = (keyId: string, warm: number, demand: KeyDemand): Entry => {
    let byWarm = this.#entries.get(keyId);
    if (byWarm === undefined) this.#entries.set(keyId, (byWarm = new Map()));
    let made = byWarm.get(warm);
    if (made === undefined) byWarm.set(warm, (made = entryOf(keyId, warm, demand)));
    return made;
  };
  /** A plan's options are kept with the plan (PoolPlans), so each is serialised once. */
  readonly #optionsSigs = new WeakMap<PoolOptions, string>();

  /** Starts a run: a change of any key's settings (not its replicas) drops every set; true when it did. */
  begin(demands: ReadonlyMap<string, KeyDemand>): boolean {
    let sig = '';
    for (const [keyId, demand] of demands) sig += `${keyId}${this.#optionsSig(demand.options)}\n`;
    const changed = sig !== this.#settingsSig;
    if (changed) {
      this.#sets.clear();
      this.#entries.clear();
    }
    this.#settingsSig = sig;
    for (const keyId of this.#entries.keys()) if (!demands.has(keyId)) this.#entries.delete(keyId);
    return changed;
  }

  /** Drops the sets of nodes no longer spread over. */
  prune(nodes: Iterable<string>): void {
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
    const set = setOf(held, demands, this.#entry);
    this.#sets.set(name, { held, set });
    return set;
  }
}
