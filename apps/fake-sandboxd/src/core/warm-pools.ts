// The node's warm pools: per-key targets, the warm sandboxes they hold, and
// the paced refill that keeps them at their targets within the node's room
// (refillConcurrency boots in flight, refillRate per second, shared fairly
// between the keys that are short). Invariant: warmTotal and refillingTotal
// are the sums of the entries' warm and refilling; a retired entry lingers
// only until its boots in flight land.
import { poolKeyId, type NodeInfo, type PoolKey, type PoolTarget } from '@warmpool/api';
import type { Timer } from '@warmpool/runtime';
import type { ResolvedOptions } from './options.js';
import { TokenBucket } from './token-bucket.js';

export interface PoolEntry {
  readonly id: string;
  readonly key: PoolKey;
  target: number;
  /** Warm sandboxes above this are destroyed: warm_max, or the target. */
  cap: number;
  warm: number;
  refilling: number;
  /** In the current pool set; a retired entry lingers only until its boots in flight land. */
  active: boolean;
  /** A boot of this key has succeeded (its golden image is ready). */
  golden: boolean;
}

/** Running totals the pools add to (the node's stats). */
export interface RefillStats {
  bootsSucceeded: number;
  bootsFailed: number;
  /** Booted or warm sandboxes destroyed without being claimed (drain, retired key, lowered target). */
  warmDestroyed: number;
}

/** What the pools need to know of the rest of the node. */
export interface PoolsHost {
  /** Sandboxes occupying room outside the pools: claimed, cold boots under way included. */
  occupiedByClaims(): number;
  /** No refill starts (draining or closed). */
  refillStopped(): boolean;
}

interface BootBatch {
  timer: Timer | undefined;
  readonly boots: Array<{ entry: PoolEntry; count: number }>;
}

/** Whether one boot fails, at the configured rate. */
export function bootFails(options: Pick<ResolvedOptions, 'bootFailureRate' | 'random'>): boolean {
  return options.bootFailureRate > 0 && options.random() < options.bootFailureRate;
}

export class WarmPools {
  readonly #options: ResolvedOptions;
  readonly #stats: RefillStats;
  readonly #host: PoolsHost;
  readonly #bucket: TokenBucket;
  /** Active entries in pool-set order, then retired ones with boots in flight. */
  #entries = new Map<string, PoolEntry>();
  readonly #batches = new Set<BootBatch>();
  #pacer: Timer | undefined;
  #roundRobin = 0;
  #warmTotal = 0;
  #refillingTotal = 0;

  constructor(options: ResolvedOptions, stats: RefillStats, host: PoolsHost) {
    this.#options = options;
    this.#stats = stats;
    this.#host = host;
    this.#bucket = new TokenBucket(options.refillRate, options.refillBurst, options.clock.now());
  }

  get warmTotal(): number {
    return this.#warmTotal;
  }

  get refillingTotal(): number {
    return this.#refillingTotal;
  }

  /** Sandboxes occupying room: warm, claimed (incl. cold boots under way) and refill boots. */
  used(): number {
    return this.#warmTotal + this.#host.occupiedByClaims() + this.#refillingTotal;
  }

  /** The entry of an active key, if the current set has it. */
  active(id: string): PoolEntry | undefined {
    const found = this.#entries.get(id);
    return found !== undefined && found.active ? found : undefined;
  }

  /** Replaces the whole target set (already judged valid); keys left out are drained and retire. */
  replace(targets: readonly PoolTarget[]): void {
    const next = new Map<string, PoolEntry>();
    for (const t of targets) {
      const id = poolKeyId(t);
      const entry: PoolEntry = this.#entries.get(id) ?? {
        id,
        key: { template: t.template, net: t.net, size: t.size },
        target: 0,
        cap: 0,
        warm: 0,
        refilling: 0,
        active: true,
        golden: false,
      };
      entry.active = true;
      entry.target = t.warm;
      // warm_max 0 means no ceiling, as absent does (the daemon omits a zero).
      entry.cap = t.warm_max === undefined || t.warm_max === 0 ? t.warm : t.warm_max;
      this.#destroyWarm(entry, entry.warm - entry.cap);
      next.set(id, entry);
    }
    for (const [id, entry] of this.#entries) {
      if (next.has(id)) continue;
      entry.active = false;
      this.#destroyWarm(entry, entry.warm);
      if (entry.refilling > 0) next.set(id, entry);
    }
    this.#entries = next;
    this.pump();
  }

  /**
   * Hands one warm sandbox of `entry` out (the caller checked `entry.warm > 0`); the caller records the claim, then
   * calls pump(entry), so the refill counts the claim's room.
   */
  takeWarm(entry: PoolEntry): void {
    entry.warm--;
    this.#warmTotal--;
  }

  /** Drain: every warm sandbox destroyed, no refill paced any more. */
  destroyAllWarm(): void {
    for (const entry of this.#entries.values()) this.#destroyWarm(entry, entry.warm);
    this.#stopPacing();
  }

  /** The active pools as info reports them. */
  infoPools(): NodeInfo['pools'] {
    const pools: NodeInfo['pools'] = [];
    for (const e of this.#entries.values()) {
      if (!e.active) continue;
      pools.push({ key: { ...e.key }, warm: e.warm, refilling: e.refilling, target: e.target, golden: e.golden });
    }
    return pools;
  }

  /** Some key is short and the node has no room left to boot it. */
  parkedForRoom(): boolean {
    if (this.#host.refillStopped() || this.used() < this.#options.room) return false;
    for (const entry of this.#entries.values()) if (this.#deficit(entry) > 0) return true;
    return false;
  }

  /**
   * Start as many refill boots as concurrency, pacing and room allow, shared
   * fairly between keys that are short (`preferred` first: a warm claim's key
   * refills at once).
   */
  pump(preferred?: PoolEntry): void {
    if (this.#host.refillStopped()) return;
    const now = this.#options.clock.now();
    const needy = this.#needyEntries(preferred);
    if (needy.length === 0) return;
    const budget = Math.min(
      this.#options.refillConcurrency - this.#refillingTotal,
      this.#options.room - this.used(),
      this.#bucket.available(now),
    );
    const batch = this.#startBoots(needy, budget);
    const started = batch.boots.reduce((n, b) => n + b.count, 0);
    if (started > 0) {
      this.#bucket.take(started, now);
      this.#batches.add(batch);
      batch.timer = this.#options.clock.setTimeout(() => this.#land(batch), this.#options.bootMs);
    }
    // Paced out while keys are still short: come back when the next token is due.
    // (Concurrency frees up when a batch lands; room when a claim goes.)
    if (
      needy.length > 0 &&
      this.#pacer === undefined &&
      this.#refillingTotal < this.#options.refillConcurrency &&
      this.used() < this.#options.room
    ) {
      const wait = this.#bucket.msUntilNext(now);
      if (Number.isFinite(wait)) {
        this.#pacer = this.#options.clock.setTimeout(
          () => {
            this.#pacer = undefined;
            this.pump();
          },
          Math.max(1, wait),
        );
      }
    }
  }

  /** Stops every timer; boots in flight never land. */
  close(): void {
    this.#stopPacing();
    for (const batch of this.#batches) batch.timer?.cancel();
    this.#batches.clear();
  }

  /** Shares `budget` boots between the `needy` keys (removing each one no longer short). */
  #startBoots(needy: PoolEntry[], budget: number): BootBatch {
    const batch: BootBatch = { timer: undefined, boots: [] };
    while (budget > 0 && needy.length > 0) {
      const share = Math.max(1, Math.floor(budget / needy.length));
      for (let i = 0; i < needy.length && budget > 0;) {
        const entry = needy[i] as PoolEntry;
        const count = Math.min(share, budget, this.#deficit(entry));
        entry.refilling += count;
        this.#refillingTotal += count;
        budget -= count;
        batch.boots.push({ entry, count });
        if (this.#deficit(entry) <= 0) needy.splice(i, 1);
        else i++;
      }
    }
    return batch;
  }

  #stopPacing(): void {
    this.#pacer?.cancel();
    this.#pacer = undefined;
  }

  #destroyWarm(entry: PoolEntry, count: number): void {
    if (count <= 0) return;
    entry.warm -= count;
    this.#warmTotal -= count;
    this.#stats.warmDestroyed += count;
  }

  #deficit(entry: PoolEntry): number {
    return entry.active ? entry.target - entry.warm - entry.refilling : 0;
  }

  #needyEntries(preferred: PoolEntry | undefined): PoolEntry[] {
    const all = [...this.#entries.values()];
    const start = all.length === 0 ? 0 : this.#roundRobin++ % all.length;
    const needy: PoolEntry[] = [];
    if (preferred !== undefined && this.#deficit(preferred) > 0) needy.push(preferred);
    for (let i = 0; i < all.length; i++) {
      const entry = all[(start + i) % all.length] as PoolEntry;
      if (entry !== preferred && this.#deficit(entry) > 0) needy.push(entry);
    }
    return needy;
  }

  /** A batch of refill boots finished: they turn warm, or are destroyed if nobody wants them any more. */
  #land(batch: BootBatch): void {
    this.#batches.delete(batch);
    const stopped = this.#host.refillStopped();
    for (const { entry, count } of batch.boots) {
      entry.refilling -= count;
      this.#refillingTotal -= count;
      let failed = 0;
      if (this.#options.bootFailureRate > 0) for (let i = 0; i < count; i++) if (bootFails(this.#options)) failed++;
      const booted = count - failed;
      this.#stats.bootsFailed += failed;
      this.#stats.bootsSucceeded += booted;
      if (booted > 0) entry.golden = true;
      const kept = !entry.active || stopped ? 0 : Math.min(booted, Math.max(0, entry.cap - entry.warm));
      entry.warm += kept;
      this.#warmTotal += kept;
      this.#stats.warmDestroyed += booted - kept;
      if (!entry.active && entry.refilling === 0 && this.#entries.get(entry.id) === entry)
        this.#entries.delete(entry.id);
    }
    this.pump();
  }
}
