// Claims per pool and tier, shared by every control-plane replica through
// Redis, so the leader's autoscaler sees the claims its peers served too.
//
//   <prefix>:demand:<namespace>/<pool>:<unix second>  hash {warm, cold}, TTL BUCKET_TTL_SECONDS
//   <prefix>:demand:epoch                             a random id the leader sets
//
// Redis is an accelerator that may lose any key: losing counts must only make
// the autoscaler conservative. A read reports `complete: false` when Redis
// cannot be read, or when the epoch key is gone or changed since the leader
// last saw it (Redis restarted empty, or was flushed): the scaler then raises
// on what it sees but cuts nothing until a full claim window has been counted
// again (libs/demand DemandScaler). A single bucket evicted under memory
// pressure is not detected: the claim pipeline already requires
// `maxmemory-policy noeviction` and checks it at start.
//
// Buckets are whole seconds of the recording replica's clock; the leader reads
// a second only once it is READ_LAG_SECONDS old, so a peer whose clock is a
// little behind still lands in a bucket not yet read.
//
// A replica's counts gather for FLUSH_MS and go to Redis together, one
// transaction per flush (HINCRBY and EXPIRE per bucket touched), not one per
// claim: a claim's count is sent FLUSH_MS after it at the latest (plus the
// event loop's lag), a small part of READ_LAG_SECONDS.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

export const BUCKET_TTL_SECONDS = 15 * 60;
export const READ_LAG_SECONDS = 1;
/** How long a replica's counts gather before they are written together. */
export const FLUSH_MS = 50;

export type ClaimTier = 'warm' | 'cold';

export interface CountedClaims {
  warm: number;
  cold: number;
  /** False when the counts may miss claims (see above). */
  complete: boolean;
}

export interface ClaimCounterOptions {
  /** A flush Redis refused or could not take: its counts are lost (the scaler then reads low). */
  onLost?: (err: unknown, claims: number) => void;
}

export class ClaimCounter {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #onLost: (err: unknown, claims: number) => void;
  /** The epoch this leader last saw; undefined until its first read. */
  #epoch: string | undefined;
  /** Counts not written yet, by bucket key. */
  #pending = new Map<string, Record<ClaimTier, number>>();
  #flushTimer: NodeJS.Timeout | undefined;

  constructor(redis: Redis, prefix: string, options: ClaimCounterOptions = {}) {
    this.#redis = redis;
    this.#prefix = `${prefix}:demand:`;
    this.#onLost = options.onLost ?? (() => undefined);
  }

  #bucket(namespace: string, pool: string, second: number): string {
    return `${this.#prefix}${namespace}/${pool}:${second}`;
  }

  /**
   * Counts one served claim (any replica), written with the others of the next FLUSH_MS. Best effort: a lost count
   * only makes the autoscaler read low.
   */
  record(namespace: string, pool: string, tier: ClaimTier, atMs: number): void {
    const key = this.#bucket(namespace, pool, Math.floor(atMs / 1000));
    let counts = this.#pending.get(key);
    if (counts === undefined) {
      counts = { warm: 0, cold: 0 };
      this.#pending.set(key, counts);
    }
    counts[tier]++;
    this.#flushTimer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  }

  /** Writes the counts gathered so far in one transaction; never rejects (a failed write goes to `onLost`). */
  async flush(): Promise<void> {
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    if (this.#pending.size === 0) return;
    const pending = this.#pending;
    this.#pending = new Map();
    const transaction = this.#redis.multi();
    /** The claims each command of the transaction carries (an EXPIRE none), to report what a failed one lost. */
    const carried: number[] = [];
    for (const [key, counts] of pending) {
      for (const tier of ['warm', 'cold'] as const)
        if (counts[tier] > 0) {
          transaction.hincrby(key, tier, counts[tier]);
          carried.push(counts[tier]);
        }
      transaction.expire(key, BUCKET_TTL_SECONDS);
      carried.push(0);
    }
    const all = carried.reduce((sum, n) => sum + n, 0);
    try {
      const replies = await transaction.exec();
      if (replies === null || replies.length === 0) {
        this.#onLost(new Error('the transaction was discarded'), all);
        return;
      }
      let lost = 0;
      let firstErr: unknown;
      replies.forEach(([err], i) => {
        if (err === null) return;
        lost += carried[i] ?? 0;
        firstErr ??= err;
      });
      if (firstErr !== undefined && lost > 0) this.#onLost(firstErr, lost);
    } catch (err) {
      this.#onLost(err, all);
    }
  }

  /**
   * The claims of each pool in the whole seconds [fromSecond, toSecond) (the
   * leader). Never throws: an unreadable Redis answers zeros, incomplete.
   */
  async read(
    pools: ReadonlyArray<{ namespace: string; pool: string }>,
    fromSecond: number,
    toSecond: number,
  ): Promise<{ counts: CountedClaims[]; complete: boolean }> {
    const span = Math.max(0, Math.min(toSecond - fromSecond, BUCKET_TTL_SECONDS));
    const start = toSecond - span;
    try {
      const pipeline = this.#redis.pipeline();
      pipeline.get(`${this.#prefix}epoch`);
      for (const { namespace, pool } of pools)
        for (let s = start; s < toSecond; s++) pipeline.hmget(this.#bucket(namespace, pool, s), 'warm', 'cold');
      const replies = (await pipeline.exec()) ?? [];
      const [epochErr, epoch] = replies[0] ?? [new Error('no reply')];
      const epochHeld = epochErr === null && typeof epoch === 'string' && epoch === this.#epoch;
      if (!epochHeld) await this.#renewEpoch();
      let i = 1;
      const counts = pools.map((): CountedClaims => {
        let warm = 0;
        let cold = 0;
        let complete = epochHeld;
        for (let s = start; s < toSecond; s++) {
          const [err, value] = replies[i++] ?? [new Error('no reply')];
          if (err !== null || !Array.isArray(value)) {
            complete = false;
            continue;
          }
          warm += Number(value[0] ?? 0) || 0;
          cold += Number(value[1] ?? 0) || 0;
        }
        return { warm, cold, complete };
      });
      return { counts, complete: epochHeld };
    } catch {
      return { counts: pools.map(() => ({ warm: 0, cold: 0, complete: false })), complete: false };
    }
  }

  async #renewEpoch(): Promise<void> {
    const epoch = randomUUID();
    await this.#redis.set(`${this.#prefix}epoch`, epoch);
    this.#epoch = epoch;
  }
}
