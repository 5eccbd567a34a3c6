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
// event loop's lag), a small part of READ_LAG_SECONDS. A count whose second
// the leader may already have read by the time it is sent (an event loop
// stalled for a second) goes to the current second instead: late, never
// unread.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

export const BUCKET_TTL_SECONDS = 15 * 60;
export const READ_LAG_SECONDS = 1;
/** How long a replica's counts gather before they are written together. */
export const FLUSH_MS = 50;
/** The longest close() waits for writes in flight; what is still unanswered then is lost with the connection. */
export const CLOSE_WAIT_MS = 2_000;

export type ClaimTier = 'warm' | 'cold';

export interface CountedClaims {
  warm: number;
  cold: number;
  /** False when the counts may miss claims (see above). */
  complete: boolean;
}

export interface ClaimCounterOptions {
  /** Counts Redis refused or could not take, or recorded after close(): lost (the scaler then reads low). */
  onLost?: (err: unknown, claims: number) => void;
  /** Epoch milliseconds; the clock `record` is given. Default: Date.now. */
  now?: () => number;
}

/** Claims not written yet, of one pool in one second. */
interface PendingBucket {
  /** `namespace/pool` */
  pool: string;
  second: number;
  warm: number;
  cold: number;
}

export class ClaimCounter {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #onLost: (err: unknown, claims: number) => void;
  readonly #now: () => number;
  /** The epoch this leader last saw; undefined until its first read. */
  #epoch: string | undefined;
  /** Counts not written yet, by bucket key. */
  #pending = new Map<string, PendingBucket>();
  #flushTimer: NodeJS.Timeout | undefined;
  /** Transactions sent and not answered yet: close() waits for them before the connection goes. */
  readonly #inFlight = new Set<Promise<void>>();
  #closed = false;

  constructor(redis: Redis, prefix: string, options: ClaimCounterOptions = {}) {
    this.#redis = redis;
    this.#prefix = `${prefix}:demand:`;
    this.#onLost = options.onLost ?? (() => undefined);
    this.#now = options.now ?? Date.now;
  }

  #bucket(pool: string, second: number): string {
    return `${this.#prefix}${pool}:${second}`;
  }

  /**
   * Counts one served claim (any replica), written with the others of the next FLUSH_MS. Best effort: a lost count
   * only makes the autoscaler read low.
   */
  record(namespace: string, pool: string, tier: ClaimTier, atMs: number): void {
    if (this.#closed) {
      this.#lose(new Error('the claim counter is closed'), 1);
      return;
    }
    this.#add(
      this.#pending,
      `${namespace}/${pool}`,
      Math.floor(atMs / 1000),
      tier === 'warm' ? 1 : 0,
      tier === 'cold' ? 1 : 0,
    );
    if (this.#flushTimer === undefined) {
      this.#flushTimer = setTimeout(() => void this.flush().catch(() => undefined), FLUSH_MS);
      this.#flushTimer.unref(); // close() flushes what is left; the timer must not hold the process
    }
  }

  #add(into: Map<string, PendingBucket>, pool: string, second: number, warm: number, cold: number): void {
    const key = this.#bucket(pool, second);
    const bucket = into.get(key);
    if (bucket === undefined) into.set(key, { pool, second, warm, cold });
    else {
      bucket.warm += warm;
      bucket.cold += cold;
    }
  }

  /** Writes the counts gathered so far in one transaction; never rejects (a failed write goes to `onLost`). */
  async flush(): Promise<void> {
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    if (this.#pending.size === 0) return;
    const pending = this.#pending;
    this.#pending = new Map();
    const write = this.#write(this.#onTime(pending));
    this.#inFlight.add(write);
    try {
      await write;
    } finally {
      this.#inFlight.delete(write);
    }
  }

  /**
   * Writes what is still gathering and waits for every transaction in flight, at most `waitMs` (a Redis that is down
   * would otherwise hold a shutdown for its command timeout); later records are lost.
   */
  async close(waitMs = CLOSE_WAIT_MS): Promise<void> {
    this.#closed = true;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, waitMs);
    });
    await Promise.race([Promise.allSettled([this.flush(), ...this.#inFlight]), deadline]);
    clearTimeout(timer);
  }

  /**
   * The buckets, with any second the leader may read before this write lands (READ_LAG_SECONDS old or more by this
   * replica's clock: the leader reads second s once its clock reaches s + READ_LAG_SECONDS + 1) moved to the current
   * second, so a count sent late is read late, not never, with a second's margin for the write and the clocks.
   */
  #onTime(pending: Map<string, PendingBucket>): Map<string, PendingBucket> {
    const now = Math.floor(this.#now() / 1000);
    const onTime = new Map<string, PendingBucket>();
    for (const b of pending.values()) {
      const second = b.second <= now - READ_LAG_SECONDS ? now : b.second;
      this.#add(onTime, b.pool, second, b.warm, b.cold);
    }
    return onTime;
  }

  async #write(pending: Map<string, PendingBucket>): Promise<void> {
    const transaction = this.#redis.multi();
    /** The claims each command of the transaction carries (an EXPIRE none), to report what a failed one lost. */
    const carried: number[] = [];
    for (const [key, bucket] of pending) {
      for (const tier of ['warm', 'cold'] as const)
        if (bucket[tier] > 0) {
          transaction.hincrby(key, tier, bucket[tier]);
          carried.push(bucket[tier]);
        }
      transaction.expire(key, BUCKET_TTL_SECONDS);
      carried.push(0);
    }
    const all = carried.reduce((sum, n) => sum + n, 0);
    try {
      // null only when a WATCH failed, which this transaction has none of: treat it as refused all the same.
      const replies = await transaction.exec();
      if (replies === null) {
        this.#lose(new Error('the transaction was discarded'), all);
        return;
      }
      let lost = 0;
      let firstErr: unknown;
      replies.forEach(([err], i) => {
        if (err === null) return;
        lost += carried[i] ?? 0;
        firstErr ??= err;
      });
      if (firstErr !== undefined && lost > 0) this.#lose(firstErr, lost);
    } catch (err) {
      this.#lose(err, all);
    }
  }

  /** Reports lost counts; a throwing listener must not reach the claim path or a flush. */
  #lose(err: unknown, claims: number): void {
    try {
      this.#onLost(err, claims);
    } catch {
      // the listener's own failure: nothing more to do with these counts
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
        for (let s = start; s < toSecond; s++) pipeline.hmget(this.#bucket(`${namespace}/${pool}`, s), 'warm', 'cold');
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
