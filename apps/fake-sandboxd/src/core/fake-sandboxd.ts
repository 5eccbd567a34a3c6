// The state machine of one fake sandboxd node, without HTTP: per-key warm
// pools kept at their targets by a paced refill (warm-pools.ts), claims with
// leases reaped at their deadline (claim-book.ts), drain, and the node's
// finite room. Sandboxes are counters and records, never processes, so one
// process can host a thousand nodes.
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
import { claimRow, ClaimBook, type Claim } from './claim-book.js';
import { SandboxdRefusal } from './errors.js';
import { resolveOptions, type FakeSandboxdOptions, type ResolvedOptions } from './options.js';
import { bootFails, WarmPools } from './warm-pools.js';

export type { Claim } from './claim-book.js';

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
  private readonly pools: WarmPools;
  private readonly claims: ClaimBook;
  private readonly sleepers = new Set<Sleeper>();
  private coldBooting = 0;
  private draining = false;
  private closed = false;

  constructor(options: FakeSandboxdOptions = {}) {
    this.options = resolveOptions(options);
    this.advertise = this.options.advertise;
    this.pools = new WarmPools(this.options, this.stats, {
      occupiedByClaims: () => this.claims.size + this.coldBooting,
      refillStopped: () => this.draining || this.closed,
    });
    // Reaping frees room: refill once per batch of expiries rather than once per claim.
    this.claims = new ClaimBook({
      clock: this.options.clock,
      reaped: () => this.stats.reaps++,
      afterReaps: () => this.pools.pump(),
    });
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
    this.pools.replace(targets);
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
    // The daemon always reports its hibernated and archived claims; the fake has neither.
    const info: NodeInfo = { pools: this.pools.infoPools(), claimed: this.claims.size, hibernated: 0, archived: 0 };
    if (this.draining) info.draining = true;
    if (this.options.redirectPeers.length > 0) info.peers = [...this.options.redirectPeers];
    if (this.pools.parkedForRoom()) {
      info.at_capacity = true;
      info.at_capacity_reason =
        `node is full: ${this.pools.used()} of room ${this.options.room} in use ` +
        `(warm ${this.pools.warmTotal}, claimed ${this.claims.size + this.coldBooting}, refilling ${this.pools.refillingTotal})`;
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
      const found = this.pools.active(poolKeyId(request));
      const warmHere = found !== undefined && found.warm > 0;
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
    const entry = this.pools.active(poolKeyId(request));
    if (this.atMaxClaims()) {
      throw new SandboxdRefusal('max-claims', 'node claim quota reached');
    }
    if (this.options.claimFailureRate > 0 && this.options.random() < this.options.claimFailureRate) {
      this.stats.claimFailures++;
      throw new SandboxdRefusal('provisioning-failed', 'provisioning failed');
    }
    const ttlSeconds = effectiveTtlSeconds(request.ttl_seconds, this.options.defaultTtlSeconds);
    const owner = { claimRef: request.claim_ref, tenant };

    if (entry !== undefined && entry.warm > 0) {
      this.pools.takeWarm(entry);
      const claim = this.claims.grant(entry.key, ttlSeconds, owner);
      this.stats.claimsWarm++;
      this.pools.pump(entry);
      if (this.options.warmClaimLatencyMs > 0) await this.sleep(this.options.warmClaimLatencyMs);
      return this.answer(claim);
    }

    const key: PoolKey = entry?.key ?? { template: request.template, net: request.net, size: request.size };
    if (this.pools.used() >= this.options.room) {
      throw new SandboxdRefusal(
        'no-room',
        `no warm sandbox of ${poolKeyId(key)} and no room to boot one (room ${this.options.room})`,
      );
    }
    this.coldBooting++;
    this.pools.pump(entry);
    try {
      await this.sleep(entry?.golden === true ? this.options.cloneMs : this.options.coldBootMs);
    } finally {
      this.coldBooting--;
    }
    if (bootFails(this.options)) {
      this.stats.claimFailures++;
      this.pools.pump();
      throw new SandboxdRefusal('provisioning-failed', 'provisioning failed: cold boot failed');
    }
    if (entry !== undefined) entry.golden = true;
    const claim = this.claims.grant(key, ttlSeconds, owner);
    this.stats.claimsCold++;
    return this.answer(claim);
  }

  /** Destroy a claimed sandbox. False if there is no such claim. */
  release(id: string): boolean {
    const claim = this.claims.get(id);
    if (claim === undefined) return false;
    this.claims.forget(claim);
    this.stats.releases++;
    this.pools.pump();
    return true;
  }

  /** Reset a claim's lease from now; undefined if there is no such claim. */
  renew(id: string, ttlSeconds: number | undefined): { deadline: string } | undefined {
    const claim = this.claims.get(id);
    if (claim === undefined) return undefined;
    this.claims.renew(claim, effectiveTtlSeconds(ttlSeconds, this.options.defaultTtlSeconds));
    return { deadline: new Date(claim.deadline).toISOString() };
  }

  get(id: string): Readonly<Claim> | undefined {
    return this.claims.get(id);
  }

  /** Calls `listener` with the id of every claim that ends (released or reaped); the returned function unsubscribes. */
  onClaimGone(listener: (id: string) => void): () => void {
    return this.claims.onGone(listener);
  }

  /**
   * Live claims in claim order; with `claimRef` (non-empty), only those recorded under exactly that ref, unless the
   * node is an older daemon, which ignores the filter; with `tenant`, only that tenant's claims.
   */
  list(claimRef?: string, tenant?: string): SandboxdRow[] {
    const filtered = claimRef !== undefined && claimRef !== '' && !this.options.olderDaemon;
    const rows: SandboxdRow[] = [];
    for (const claim of this.claims.claims(filtered ? claimRef : undefined))
      if (tenant === undefined || claim.tenant === tenant) rows.push(this.row(claim));
    return rows;
  }

  /** The wire row of a claim; the token only when asked (callers with the configured root token). */
  row(claim: Readonly<Claim>, withToken = false): SandboxdRow {
    return claimRow(claim, { omitClaimedAt: this.options.omitClaimedAt, withToken });
  }

  /** Whether this node serves renew (an older daemon has no such route). */
  get renews(): boolean {
    return !this.options.olderDaemon;
  }

  /** New claims answer 429 and warm sandboxes are destroyed; live claims keep running. */
  drain(): NodeInfo {
    this.draining = true;
    this.pools.destroyAllWarm();
    return this.info();
  }

  undrain(): NodeInfo {
    this.draining = false;
    this.pools.pump();
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
    this.pools.close();
    for (const sleeper of this.sleepers) {
      sleeper.timer.cancel();
      sleeper.reject(new SandboxdRefusal('closed', 'node is shutting down'));
    }
    this.sleepers.clear();
    this.claims.close();
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
