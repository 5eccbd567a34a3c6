// The term's spread, recomputed only where an event changed something.
//
// Invariant: run(pools, nodes) returns exactly what
// spread(pools, nodes, previous) returns, `previous` being the last run's
// targets (spread-memo.properties.test.ts checks it over random event
// sequences). It rests on the spread's first step: each pool's ideal targets
// depend only on its id, its replicas and the eligible node names, and where
// no node's demand (the ideal units plus the units held off the ideal,
// Σ max(previous, ideal)) exceeds its room, the spread is the ideal of every
// pool. So each pool's ideal is kept while its replicas and the eligible nodes
// hold, a patch recomputes one pool's, and when that check finds a node short
// of room the full spread runs instead. While the previous targets are the
// ideals themselves (#built), each node's load is kept too and the check moves
// it by the changed pools only: a one-pool patch costs that pool's nodes plus
// one comparison per eligible node, not a pass over every pool's entries.
import { spread, type PoolDemand, type Spread, type SpreadNode, type Targets } from '@warmpool/pool-model';

type Held = ReadonlyMap<string, number>;

/** How a run went: only the pools that changed, or the full spread. */
export type SpreadKind = 'incremental' | 'full';

interface Ideal {
  replicas: number;
  /** node → units (> 0). */
  targets: Held;
}

export class IncrementalSpread {
  #previous: Targets | undefined;
  /** The eligible node names the ideals were made over, in order. */
  #eligibleSig: string | undefined;
  readonly #ideals = new Map<string, Ideal>();
  /** The pool → ideal the previous targets were built from, when they were all ideal. */
  #built: Map<string, Ideal> | undefined;
  /** While #built is set: node → Σ units of the built ideals on it (= what the previous targets hold there). */
  #load: Map<string, number> | undefined;
  #forceFull = false;
  /** The nodes whose targets the last run may have changed; undefined: any node's. */
  #touched: ReadonlySet<string> | undefined;

  readonly #onRun: (kind: SpreadKind) => void;

  /** `onRun` hears which way each run went (for the metrics). */
  constructor(previous?: Targets, onRun: (kind: SpreadKind) => void = () => undefined) {
    this.#previous = previous;
    this.#onRun = onRun;
  }

  /** The nodes whose targets (map) the last run may have replaced; undefined: any node's. */
  get touched(): ReadonlySet<string> | undefined {
    return this.#touched;
  }

  /** The last run's targets (or what the term began from). */
  get previous(): Targets | undefined {
    return this.#previous;
  }

  /**
   * The next run is the full spread from the previous targets. The ideals are kept: each is a pure function of
   * what it is keyed by (pool id, replicas, the eligible names), so there is nothing in them to drift.
   */
  resync(): void {
    this.#forceFull = true;
  }

  run(pools: readonly PoolDemand[], nodes: readonly SpreadNode[]): Spread {
    const eligible = nodes.filter((node) => node.eligible !== false).sort(byName);
    const sig = eligible.map((node) => node.name).join('\n');
    const fresh = sig !== this.#eligibleSig;
    if (fresh) {
      this.#eligibleSig = sig;
      this.#ideals.clear();
      this.#forget();
    }
    // Without an eligible node nothing is placed: the ideal (every replica placed) does not apply.
    const ideals = fresh || eligible.length === 0 ? undefined : this.#idealsOf(pools, eligible);
    const load = ideals === undefined ? undefined : this.#loadOf(ideals);
    const fits = load !== undefined && fitsIn(load, eligible);
    const incremental = fits && !this.#forceFull;
    this.#forceFull = false;
    this.#touched = undefined;
    const result = incremental ? this.#fromIdeals(ideals as Map<string, Ideal>, eligible) : this.#full(pools, nodes);
    if (!incremental && fits) {
      // The resync's full spread is, by the invariant, the ideals: the next runs move from them again.
      this.#built = ideals;
      this.#load = idealLoad(ideals as Map<string, Ideal>);
    }
    this.#onRun(incremental ? 'incremental' : 'full');
    this.#previous = result.targets;
    return result;
  }

  #forget(): void {
    this.#built = undefined;
    this.#load = undefined;
  }

  /** The full spread; a node whose targets come out as they were keeps its map (its desired set is kept). */
  #full(pools: readonly PoolDemand[], nodes: readonly SpreadNode[]): Spread {
    this.#forget();
    const previous = this.#previous;
    const result = spread(pools, nodes, previous);
    if (previous === undefined) return result;
    const targets = new Map<string, Held>();
    for (const [node, held] of result.targets) {
      const kept = previous.get(node);
      targets.set(node, kept !== undefined && sameHeld(kept, held) ? kept : held);
    }
    return { ...result, targets };
  }

  /** Every pool's ideal over `eligible`, reusing those whose replicas did not change; undefined for duplicate ids. */
  #idealsOf(pools: readonly PoolDemand[], eligible: readonly SpreadNode[]): Map<string, Ideal> | undefined {
    const ideals = new Map<string, Ideal>();
    const stale: PoolDemand[] = [];
    for (const pool of pools) {
      if (ideals.has(pool.id)) return undefined;
      const ideal = this.#ideals.get(pool.id);
      if (ideal === undefined || ideal.replicas !== pool.replicas) stale.push(pool);
      ideals.set(pool.id, ideal as Ideal);
    }
    const made = idealsOf(stale, eligible);
    for (const pool of stale) {
      const ideal = { replicas: pool.replicas, targets: made.get(pool.id) ?? new Map<string, number>() };
      this.#ideals.set(pool.id, ideal);
      ideals.set(pool.id, ideal);
    }
    for (const id of this.#ideals.keys()) if (!ideals.has(id)) this.#ideals.delete(id);
    return ideals;
  }

  /**
   * Each node's demand: Σ over pools of max(previous, ideal), counting only pools still asked for. While the previous
   * targets are the built ideals that is the kept load moved by the pools whose ideal changed; else a full pass.
   */
  #loadOf(ideals: ReadonlyMap<string, Ideal>): Map<string, number> {
    const built = this.#built;
    const kept = this.#load;
    if (built === undefined || kept === undefined) return this.#fullLoad(ideals);
    const load = new Map(kept);
    const move = (node: string, units: number): void => {
      load.set(node, (load.get(node) ?? 0) + units);
    };
    for (const [id, ideal] of ideals) {
      const before = built.get(id);
      if (before === ideal) continue;
      if (ideal.replicas === 0) {
        // A pool scaled to 0 holds nothing it is asked for.
        for (const [node, units] of before?.targets ?? []) move(node, -units);
        continue;
      }
      // max(previous, ideal): the previous units stay counted, the new ideal adds where it is above them.
      for (const [node, units] of ideal.targets) move(node, Math.max(0, units - (before?.targets.get(node) ?? 0)));
    }
    for (const [id, before] of built) {
      if (ideals.has(id)) continue;
      for (const [node, units] of before.targets) move(node, -units);
    }
    return load;
  }

  #fullLoad(ideals: ReadonlyMap<string, Ideal>): Map<string, number> {
    const load = idealLoad(ideals);
    const add = (node: string, units: number): void => {
      load.set(node, (load.get(node) ?? 0) + units);
    };
    // Units held off the ideal: what the previous targets hold above it, of pools still asked for.
    for (const [node, held] of this.#previous ?? []) {
      for (const [id, raw] of held) {
        const ideal = ideals.get(id);
        if (ideal === undefined || ideal.replicas === 0) continue;
        const count = Number.isFinite(raw) ? Math.floor(raw) : 0;
        const above = count - (ideal.targets.get(node) ?? 0);
        if (above > 0) add(node, above);
      }
    }
    return load;
  }

  /** The spread when every pool gets its ideal: node maps untouched by a changed pool are the previous ones. */
  #fromIdeals(ideals: Map<string, Ideal>, eligible: readonly SpreadNode[]): Spread {
    const placed = new Map<string, number>();
    for (const [id, ideal] of ideals) placed.set(id, ideal.replicas);
    const built = this.#built;
    const previous = this.#previous;
    const load = this.#load;
    this.#built = ideals;
    if (built === undefined || previous === undefined || load === undefined) {
      this.#load = idealLoad(ideals);
      return { targets: buildAll(ideals, eligible), placed, unplaced: new Map() };
    }
    // The pools whose ideal is not the one the previous targets hold (changed, new or gone), and their nodes.
    const changed: Array<[string, Ideal | undefined]> = [];
    for (const [id, ideal] of ideals) if (built.get(id) !== ideal) changed.push([id, ideal]);
    for (const id of built.keys()) if (!ideals.has(id)) changed.push([id, undefined]);
    const touched = new Set<string>();
    for (const [id, ideal] of changed) {
      for (const [node, units] of ideal?.targets ?? []) {
        touched.add(node);
        load.set(node, (load.get(node) ?? 0) + units);
      }
      for (const [node, units] of built.get(id)?.targets ?? []) {
        touched.add(node);
        load.set(node, (load.get(node) ?? 0) - units);
      }
    }
    const targets = new Map<string, Held>();
    for (const node of eligible) {
      const kept = previous.get(node.name) ?? new Map<string, number>();
      if (!touched.has(node.name)) {
        targets.set(node.name, kept);
        continue;
      }
      const held = new Map(kept);
      for (const [id, ideal] of changed) {
        const units = ideal?.targets.get(node.name);
        if (units === undefined) held.delete(id);
        else held.set(id, units);
      }
      targets.set(node.name, held);
    }
    this.#touched = touched;
    return { targets, placed, unplaced: new Map() };
  }
}

function byName(a: SpreadNode, b: SpreadNode): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * The pools' ideal targets, in one spread over the eligible nodes without a room limit: nothing contends there, so
 * each pool gets its ideal, which depends on nothing but its id, its replicas and the nodes.
 */
function idealsOf(pools: readonly PoolDemand[], eligible: readonly SpreadNode[]): Map<string, Map<string, number>> {
  const ideals = new Map<string, Map<string, number>>(pools.map((pool) => [pool.id, new Map()]));
  if (pools.length === 0) return ideals;
  const unlimited = spread(
    pools,
    eligible.map((node) => ({ name: node.name, room: Number.POSITIVE_INFINITY })),
  );
  for (const [node, held] of unlimited.targets)
    for (const [id, units] of held) if (units > 0) ideals.get(id)?.set(node, units);
  return ideals;
}

/** No eligible node's load exceeds its room. */
function fitsIn(load: ReadonlyMap<string, number>, eligible: readonly SpreadNode[]): boolean {
  for (const node of eligible) if ((load.get(node.name) ?? 0) > Math.max(0, node.room)) return false;
  return true;
}

/** node → Σ units of the ideals on it. */
function idealLoad(ideals: ReadonlyMap<string, Ideal>): Map<string, number> {
  const load = new Map<string, number>();
  for (const ideal of ideals.values())
    for (const [node, units] of ideal.targets) load.set(node, (load.get(node) ?? 0) + units);
  return load;
}

function sameHeld(a: Held, b: Held): boolean {
  if (a.size !== b.size) return false;
  for (const [id, units] of a) if (b.get(id) !== units) return false;
  return true;
}

function buildAll(ideals: ReadonlyMap<string, Ideal>, eligible: readonly SpreadNode[]): Map<string, Held> {
  const targets = new Map<string, Map<string, number>>();
  for (const node of eligible) targets.set(node.name, new Map());
  for (const [id, ideal] of [...ideals].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    for (const [node, units] of ideal.targets) targets.get(node)?.set(id, units);
  return targets;
}
