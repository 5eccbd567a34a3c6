// The state machine of one fake sandboxd node, without HTTP: per-key warm
// pools kept at their targets by a paced refill, claims with leases reaped at
// their deadline, drain, and the node's finite room. Sandboxes are counters and
// records, never processes, so one process can host a thousand nodes.
import {
  effectiveTtlSeconds,
  poolKeyId,
  type ClaimAnswer,
  type ClaimGrant,
  type ClaimRequest,
  type NodeInfo,
  type PoolKey,
  type PoolTarget,
  type SandboxdRow,
} from '@warmpool/api';
import type { Timer } from '@warmpool/runtime';
import { DeadlineTimer } from './deadline-timer.js';
import { SandboxdRefusal } from './errors.js';
import { newSandboxId, newSandboxToken } from './ids.js';
import { resolveOptions, type FakeSandboxdOptions, type ResolvedOptions } from './options.js';
import { TokenBucket } from './token-bucket.js';

interface PoolEntry {
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

/** A live claim. */
export interface Claim {
  readonly id: string;
  readonly token: string;
  readonly key: PoolKey;
  readonly claimedAt: number;
  readonly claimRef: string | undefined;
  /** The tenant whose token claimed it; undefined for root. */
  readonly tenant: string | undefined;
  /** Epoch ms when the node reaps it. */
  deadline: number;
  heapIndex: number;
}

/** What `PUT /v1/pools` did: the fresh info, and how many warm VMs it destroyed (the answer waits for them). */
export interface PoolsReplaced {
  info: NodeInfo;
  trimmed: number;
}

/** The real daemon names at most two peers in a redirect (power of two choices). */
const MAX_REDIRECT_PEERS = 2;

/** Running totals, read by /metrics. */
export interface FakeSandboxdStats {
  claimsWarm: number;
  claimsCold: number;
  claimFailures: number;
  releases: number;
  reaps: number;
  bootsSucceeded: number;
  bootsFailed: number;
  /** Booted or warm sandboxes destroyed without being claimed (drain, retired key, lowered target). */
  warmDestroyed: number;
}

interface BootBatch {
  timer: Timer | undefined;
  readonly boots: Array<{ entry: PoolEntry; count: number }>;
}

interface Sleeper {
  timer: Timer;
  reject: (err: Error) => void;
}

export class FakeSandboxd {
  /**
   * `owner_addr` of claim answers (false: none); settable because a server's port may be known only after it binds.
   * A clientAdvertise origin wins over it.
   */
  advertise: string | false;
  readonly stats: FakeSandboxdStats = {
    claimsWarm: 0,
    claimsCold: 0,
    claimFailures: 0,
    releases: 0,
    reaps: 0,
    bootsSucceeded: 0,
    bootsFailed: 0,
    warmDestroyed: 0,
  };

  private readonly options: ResolvedOptions;
  /** Active entries in pool-set order, then retired ones with boots in flight. */
  private pools = new Map<string, PoolEntry>();
  private readonly claims = new Map<string, Claim>();
  private readonly claimsByRef = new Map<string, Set<Claim>>();
  private readonly deadlines: DeadlineTimer<Claim>;
  private readonly bucket: TokenBucket;
  private readonly bootBatches = new Set<BootBatch>();
  private readonly sleepers = new Set<Sleeper>();
  private readonly goneListeners = new Set<(id: string) => void>();
  private pumpTimer: Timer | undefined;
  private roundRobin = 0;
  private warmTotal = 0;
  private refillingTotal = 0;
  private coldBooting = 0;
  private draining = false;
  private closed = false;

  constructor(options: FakeSandboxdOptions = {}) {
    this.options = resolveOptions(options);
    this.advertise = this.options.advertise;
    // Reaping frees room: refill once per batch of expiries rather than once per claim.
    this.deadlines = new DeadlineTimer<Claim>(
      this.options.clock,
      (claim) => this.reap(claim),
      () => this.pump(),
    );
    this.bucket = new TokenBucket(this.options.refillRate, this.options.refillBurst, this.options.clock.now());
  }

  /** Replace the node's whole warm-target set; keys left out are drained and retire. */
  setPools(targets: readonly PoolTarget[]): NodeInfo {
    return this.replacePools(targets).info;
  }

  /**
   * setPools, and how many warm VMs it destroyed. The whole set is judged before any of it applies: an egress key on
   * a node without an egress attachment refuses the set (SandboxdRefusal 'no-egress') and changes nothing.
   */
  replacePools(targets: readonly PoolTarget[]): PoolsReplaced {
    for (const t of targets) this.checkAttachment(t);
    const before = this.stats.warmDestroyed;
    const next = new Map<string, PoolEntry>();
    for (const t of targets) {
      const id = poolKeyId(t);
      const entry: PoolEntry = this.pools.get(id) ?? {
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
      this.destroyWarm(entry, entry.warm - entry.cap);
      next.set(id, entry);
    }
    for (const [id, entry] of this.pools) {
      if (next.has(id)) continue;
      entry.active = false;
      this.destroyWarm(entry, entry.warm);
      if (entry.refilling > 0) next.set(id, entry);
    }
    this.pools = next;
    this.pump();
    return { info: this.info(), trimmed: this.stats.warmDestroyed - before };
  }

  /** How long destroying `trimmed` warm VMs takes: refillConcurrency at a time, trimMsPerVm each. */
  trimDurationMs(trimmed: number): number {
    if (trimmed <= 0 || this.options.trimMsPerVm === 0) return 0;
    return Math.ceil(trimmed / Math.max(1, this.options.refillConcurrency)) * this.options.trimMsPerVm;
  }

  /** Wait (on the node's clock) until the trimmed VMs are gone; rejects if the node closes meanwhile. */
  async awaitTrim(trimmed: number): Promise<void> {
    const ms = this.trimDurationMs(trimmed);
    if (ms > 0) await this.sleep(ms);
  }

  info(): NodeInfo {
    const pools: NodeInfo['pools'] = [];
    for (const e of this.pools.values()) {
      if (!e.active) continue;
      pools.push({ key: { ...e.key }, warm: e.warm, refilling: e.refilling, target: e.target, golden: e.golden });
    }
    // The daemon always reports its hibernated and archived claims; the fake has neither.
    const info: NodeInfo = { pools, claimed: this.claims.size, hibernated: 0, archived: 0 };
    if (this.draining) info.draining = true;
    if (this.options.redirectPeers.length > 0) info.peers = [...this.options.redirectPeers];
    if (this.refillParkedForRoom()) {
      info.at_capacity = true;
      info.at_capacity_reason =
        `node is full: ${this.used()} of room ${this.options.room} in use ` +
        `(warm ${this.warmTotal}, claimed ${this.claims.size + this.coldBooting}, refilling ${this.refillingTotal})`;
    }
    return info;
  }

  /**
   * A claim as a mesh member answers it: redirected to the configured peers on a warm miss, at max_claims or while
   * draining, unless the claim says no_redirect; served here otherwise (see claim).
   */
  async claimOrRedirect(request: ClaimRequest, tenant?: string): Promise<ClaimAnswer> {
    const peers = this.options.redirectPeers;
    if (peers.length > 0 && request.no_redirect !== true && !this.closed) {
      this.checkAttachment(request);
      const found = this.pools.get(poolKeyId(request));
      const warmHere = found !== undefined && found.active && found.warm > 0;
      if (!warmHere || this.draining || this.atMaxClaims()) return { redirect: peers.slice(0, MAX_REDIRECT_PEERS) };
    }
    return this.claim(request, tenant);
  }

  /**
   * Hand over a warm sandbox of the key, or provision one: a clone when the key's golden is ready, a cold boot
   * otherwise. Refusals reject with a SandboxdRefusal and change nothing.
   */
  async claim(request: ClaimRequest, tenant?: string): Promise<ClaimGrant> {
    if (this.closed) throw new SandboxdRefusal('closed', 'node is shutting down');
    this.checkAttachment(request);
    if (this.draining) throw new SandboxdRefusal('draining', 'node draining');
    // A key outside the current pool set has no warm sandboxes: it is booted cold like any other miss.
    const found = this.pools.get(poolKeyId(request));
    const entry = found !== undefined && found.active ? found : undefined;
    if (this.atMaxClaims()) {
      throw new SandboxdRefusal('max-claims', 'node claim quota reached');
    }
    if (this.options.claimFailureRate > 0 && this.options.random() < this.options.claimFailureRate) {
      this.stats.claimFailures++;
      throw new SandboxdRefusal('provisioning-failed', 'provisioning failed');
    }
    const ttlSeconds = effectiveTtlSeconds(request.ttl_seconds, this.options.defaultTtlSeconds);

    if (entry !== undefined && entry.warm > 0) {
      entry.warm--;
      this.warmTotal--;
      const claim = this.grant(entry.key, ttlSeconds, request.claim_ref, tenant);
      this.stats.claimsWarm++;
      this.pump(entry);
      if (this.options.warmClaimLatencyMs > 0) await this.sleep(this.options.warmClaimLatencyMs);
      return this.answer(claim);
    }

    const key: PoolKey = entry?.key ?? { template: request.template, net: request.net, size: request.size };
    if (this.used() >= this.options.room) {
      throw new SandboxdRefusal(
        'no-room',
        `no warm sandbox of ${poolKeyId(key)} and no room to boot one (room ${this.options.room})`,
      );
    }
    this.coldBooting++;
    this.pump(entry);
    try {
      await this.sleep(entry?.golden === true ? this.options.cloneMs : this.options.coldBootMs);
    } finally {
      this.coldBooting--;
    }
    if (this.bootFails()) {
      this.stats.claimFailures++;
      this.pump();
      throw new SandboxdRefusal('provisioning-failed', 'provisioning failed: cold boot failed');
    }
    if (entry !== undefined) entry.golden = true;
    const claim = this.grant(key, ttlSeconds, request.claim_ref, tenant);
    this.stats.claimsCold++;
    return this.answer(claim);
  }

  /** Destroy a claimed sandbox. False if there is no such claim. */
  release(id: string): boolean {
    const claim = this.claims.get(id);
    if (claim === undefined) return false;
    this.forget(claim);
    this.stats.releases++;
    this.pump();
    return true;
  }

  /** Reset a claim's lease from now; undefined if there is no such claim. */
  renew(id: string, ttlSeconds: number | undefined): { deadline: string } | undefined {
    const claim = this.claims.get(id);
    if (claim === undefined) return undefined;
    claim.deadline = this.options.clock.now() + effectiveTtlSeconds(ttlSeconds, this.options.defaultTtlSeconds) * 1000;
    this.deadlines.update(claim);
    return { deadline: new Date(claim.deadline).toISOString() };
  }

  get(id: string): Readonly<Claim> | undefined {
    return this.claims.get(id);
  }

  /** Calls `listener` with the id of every claim that ends (released or reaped); the returned function unsubscribes. */
  onClaimGone(listener: (id: string) => void): () => void {
    this.goneListeners.add(listener);
    return () => this.goneListeners.delete(listener);
  }

  /**
   * Live claims in claim order; with `claimRef` (non-empty), only those recorded under exactly that ref, unless the
   * node is an older daemon, which ignores the filter; with `tenant`, only that tenant's claims.
   */
  list(claimRef?: string, tenant?: string): SandboxdRow[] {
    const filtered = claimRef !== undefined && claimRef !== '' && !this.options.olderDaemon;
    const source = filtered ? (this.claimsByRef.get(claimRef)?.values() ?? []) : this.claims.values();
    const rows: SandboxdRow[] = [];
    for (const claim of source) if (tenant === undefined || claim.tenant === tenant) rows.push(this.row(claim));
    return rows;
  }

  /** The wire row of a claim; the token only when asked (callers with the configured root token). */
  row(claim: Readonly<Claim>, withToken = false): SandboxdRow {
    const row: SandboxdRow = {
      id: claim.id,
      key: { ...claim.key },
      deadline: new Date(claim.deadline).toISOString(),
      hibernated: false,
    };
    if (!this.options.omitClaimedAt) row.claimed_at = new Date(claim.claimedAt).toISOString();
    if (claim.claimRef !== undefined) row.claim_ref = claim.claimRef;
    if (claim.tenant !== undefined) row.tenant = claim.tenant;
    if (withToken) row.token = claim.token;
    return row;
  }

  /** Whether this node serves renew (an older daemon has no such route). */
  get renews(): boolean {
    return !this.options.olderDaemon;
  }

  /** New claims answer 429 and warm sandboxes are destroyed; live claims keep running. */
  drain(): NodeInfo {
    this.draining = true;
    for (const entry of this.pools.values()) this.destroyWarm(entry, entry.warm);
    this.pumpTimer?.cancel();
    this.pumpTimer = undefined;
    return this.info();
  }

  undrain(): NodeInfo {
    this.draining = false;
    this.pump();
    return this.info();
  }

  get isDraining(): boolean {
    return this.draining;
  }

  get claimedCount(): number {
    return this.claims.size;
  }

  /** Stop every timer. Pending claims reject; state stays readable. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.pumpTimer?.cancel();
    this.pumpTimer = undefined;
    for (const batch of this.bootBatches) batch.timer?.cancel();
    this.bootBatches.clear();
    for (const sleeper of this.sleepers) {
      sleeper.timer.cancel();
      sleeper.reject(new SandboxdRefusal('closed', 'node is shutting down'));
    }
    this.sleepers.clear();
    this.deadlines.close();
  }

  private answer(claim: Claim): ClaimGrant {
    const grant: ClaimGrant = { id: claim.id, token: claim.token, deadline: new Date(claim.deadline).toISOString() };
    const owner = this.options.clientAdvertise ?? this.advertise;
    if (owner !== false && owner !== '') grant.owner_addr = owner;
    return grant;
  }

  private checkAttachment(key: { net: string }): void {
    if (key.net === 'egress' && !this.options.egressAttachment)
      throw new SandboxdRefusal('no-egress', 'node has no egress attachment (bridge or network)');
  }

  private atMaxClaims(): boolean {
    return this.claims.size + this.coldBooting >= this.options.maxClaims;
  }

  private grant(key: PoolKey, ttlSeconds: number, claimRef: string | undefined, tenant: string | undefined): Claim {
    const now = this.options.clock.now();
    const claim: Claim = {
      id: newSandboxId(),
      token: newSandboxToken(),
      key,
      claimedAt: now,
      claimRef,
      tenant,
      deadline: now + ttlSeconds * 1000,
      heapIndex: -1,
    };
    this.claims.set(claim.id, claim);
    if (claimRef !== undefined) {
      let set = this.claimsByRef.get(claimRef);
      if (set === undefined) this.claimsByRef.set(claimRef, (set = new Set()));
      set.add(claim);
    }
    this.deadlines.add(claim);
    return claim;
  }

  private forget(claim: Claim): void {
    this.claims.delete(claim.id);
    for (const listener of this.goneListeners) listener(claim.id);
    this.deadlines.remove(claim);
    if (claim.claimRef !== undefined) {
      const set = this.claimsByRef.get(claim.claimRef);
      set?.delete(claim);
      if (set?.size === 0) this.claimsByRef.delete(claim.claimRef);
    }
  }

  private reap(claim: Claim): void {
    this.forget(claim);
    this.stats.reaps++;
  }

  private destroyWarm(entry: PoolEntry, count: number): void {
    if (count <= 0) return;
    entry.warm -= count;
    this.warmTotal -= count;
    this.stats.warmDestroyed += count;
  }

  /** Sandboxes occupying room: warm, claimed (incl. cold boots under way) and refill boots. */
  private used(): number {
    return this.warmTotal + this.claims.size + this.coldBooting + this.refillingTotal;
  }

  private deficit(entry: PoolEntry): number {
    return entry.active ? entry.target - entry.warm - entry.refilling : 0;
  }

  private refillParkedForRoom(): boolean {
    if (this.draining || this.closed || this.used() < this.options.room) return false;
    for (const entry of this.pools.values()) if (this.deficit(entry) > 0) return true;
    return false;
  }

  private bootFails(): boolean {
    return this.options.bootFailureRate > 0 && this.options.random() < this.options.bootFailureRate;
  }

  /**
   * Start as many refill boots as concurrency, pacing and room allow, shared
   * fairly between keys that are short (`preferred` first: a warm claim's key
   * refills at once).
   */
  private pump(preferred?: PoolEntry): void {
    if (this.closed || this.draining) return;
    const now = this.options.clock.now();
    const needy = this.needyEntries(preferred);
    if (needy.length === 0) return;
    let budget = Math.min(
      this.options.refillConcurrency - this.refillingTotal,
      this.options.room - this.used(),
      this.bucket.available(now),
    );
    const batch: BootBatch = { timer: undefined, boots: [] };
    while (budget > 0 && needy.length > 0) {
      const share = Math.max(1, Math.floor(budget / needy.length));
      for (let i = 0; i < needy.length && budget > 0;) {
        const entry = needy[i] as PoolEntry;
        const count = Math.min(share, budget, this.deficit(entry));
        entry.refilling += count;
        this.refillingTotal += count;
        budget -= count;
        batch.boots.push({ entry, count });
        if (this.deficit(entry) <= 0) needy.splice(i, 1);
        else i++;
      }
    }
    const started = batch.boots.reduce((n, b) => n + b.count, 0);
    if (started > 0) {
      this.bucket.take(started, now);
      this.bootBatches.add(batch);
      batch.timer = this.options.clock.setTimeout(() => this.land(batch), this.options.bootMs);
    }
    // Paced out while keys are still short: come back when the next token is due.
    // (Concurrency frees up when a batch lands; room when a claim goes.)
    if (
      needy.length > 0 &&
      this.pumpTimer === undefined &&
      this.refillingTotal < this.options.refillConcurrency &&
      this.used() < this.options.room
    ) {
      const wait = this.bucket.msUntilNext(now);
      if (Number.isFinite(wait)) {
        this.pumpTimer = this.options.clock.setTimeout(
          () => {
            this.pumpTimer = undefined;
            this.pump();
          },
          Math.max(1, wait),
        );
      }
    }
  }

  private needyEntries(preferred: PoolEntry | undefined): PoolEntry[] {
    const all = [...this.pools.values()];
    const start = all.length === 0 ? 0 : this.roundRobin++ % all.length;
    const needy: PoolEntry[] = [];
    if (preferred !== undefined && this.deficit(preferred) > 0) needy.push(preferred);
    for (let i = 0; i < all.length; i++) {
      const entry = all[(start + i) % all.length] as PoolEntry;
      if (entry !== preferred && this.deficit(entry) > 0) needy.push(entry);
    }
    return needy;
  }

  /** A batch of refill boots finished: they turn warm, or are destroyed if nobody wants them any more. */
  private land(batch: BootBatch): void {
    this.bootBatches.delete(batch);
    for (const { entry, count } of batch.boots) {
      entry.refilling -= count;
      this.refillingTotal -= count;
      let failed = 0;
      if (this.options.bootFailureRate > 0) for (let i = 0; i < count; i++) if (this.bootFails()) failed++;
      const booted = count - failed;
      this.stats.bootsFailed += failed;
      this.stats.bootsSucceeded += booted;
      if (booted > 0) entry.golden = true;
      const kept = !entry.active || this.draining ? 0 : Math.min(booted, Math.max(0, entry.cap - entry.warm));
      entry.warm += kept;
      this.warmTotal += kept;
      this.stats.warmDestroyed += booted - kept;
      if (!entry.active && entry.refilling === 0 && this.pools.get(entry.id) === entry) this.pools.delete(entry.id);
    }
    this.pump();
  }

  private sleep(ms: number): Promise<void> {
    if (this.closed) return Promise.reject(new SandboxdRefusal('closed', 'node is shutting down'));
    return new Promise((resolve, reject) => {
      const sleeper: Sleeper = {
        timer: this.options.clock.setTimeout(() => {
          this.sleepers.delete(sleeper);
          resolve();
        }, ms),
        reject,
      };
      this.sleepers.add(sleeper);
    });
  }
}
