import { canGrow, schedulable, type Capacity } from './capacity.js';
import { compareForeignCandidates, compareIdentity } from './ranking.js';

/** Monotonic milliseconds on the local machine (never a wall clock). */
export type MonotonicClock = () => number;

/** A record as it arrives: the capacity plus how old it already is. */
export interface CapacityObservation extends Capacity {
  /**
   * Age of the sample when handed over, measured on ONE clock (e.g. the hub's:
   * the TTL it was written with minus Redis's remaining TTL). Omitted means
   * observed just now, as for the local cluster's own records. Negative ages
   * count as 0: a sample cannot be from the future, and honouring one would
   * extend its life past the TTL.
   */
  ageMs?: number;
}

/** A live record as read back, with its age at the time of the read. */
export interface CapacityRecord extends Capacity {
  ageMs: number;
}

/** The foreign member a create should go to, see {@link CapacityRegistry.bestForeignMember}. */
export interface ForeignChoice {
  clusterId: string;
  memberPool: string;
  /** The member's idle count; 0 when it was chosen for scale-up headroom. */
  idle: number;
}

export interface CapacityRegistryOptions {
  /** This cluster's id: its records are "local", every other cluster's "foreign". */
  localClusterId: string;
  /** How long a record lives after it was observed. */
  ttlMs: number;
  /** Injectable for tests; defaults to `performance.now()`. */
  now?: MonotonicClock;
}

interface StoredRecord {
  readonly capacity: Readonly<Capacity>;
  /** Local monotonic time of the observation: now - age at upsert; only ever moved later (renew). */
  observedAt: number;
}

/** The records of one (namespace, env), keyed by (clusterId, memberPool). */
interface EnvBucket {
  members: Map<string, StoredRecord>;
  /**
   * A lower bound on the members' observedAt. While it is live every member
   * is, so the common query skips the expiry pass; once it is not, a pass
   * drops the expired members and makes the bound exact again.
   */
  oldestObservedAt: number;
}

/**
 * In-memory soft state of federated capacity: every record ages out after the
 * TTL, so a cluster that stops reporting simply disappears; nothing is ever
 * deleted explicitly.
 *
 * Expiry: a record's age is `now - observedAt`; it is live while
 * `age < ttlMs` and expired from `age === ttlMs` on (the same edge as a
 * Redis key whose remaining TTL reached 0). Expired records are never
 * returned; a query drops those of the Env it reads, and `prune()` /
 * `snapshot()` drop them all.
 *
 * Every method is synchronous, so no caller can observe a half-applied
 * upsert across an await.
 *
 * Records are indexed by (namespace, env), so per-Env queries cost
 * O(members of that Env across clusters), not O(all records).
 */
export class CapacityRegistry {
  readonly localClusterId: string;
  readonly ttlMs: number;
  readonly #now: MonotonicClock;
  readonly #byEnv = new Map<string, EnvBucket>();
  /** Every held record of each cluster, so a cluster's report renews them without a copy each. */
  readonly #byCluster = new Map<string, Set<StoredRecord>>();
  #size = 0;

  constructor(options: CapacityRegistryOptions) {
    if (!Number.isFinite(options.ttlMs) || options.ttlMs <= 0) {
      throw new RangeError(`ttlMs must be a positive finite number, got ${options.ttlMs}`);
    }
    this.localClusterId = options.localClusterId;
    this.ttlMs = options.ttlMs;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Records held, including expired ones not yet dropped. */
  get size(): number {
    return this.#size;
  }

  /**
   * Records a batch of samples. A sample replaces the member's record unless
   * the record already held was observed later (the hub may hand over an older
   * copy after a newer one). Samples already expired on arrival are dropped.
   * The batch is validated first, so a bad item leaves the registry untouched.
   */
  upsert(items: Iterable<CapacityObservation>): void {
    const batch = [...items];
    for (const item of batch) {
      if (item.ageMs !== undefined && Number.isNaN(item.ageMs)) {
        throw new RangeError(`ageMs is NaN for ${describe(item)}`);
      }
    }
    const now = this.#now();
    for (const item of batch) {
      const observedAt = now - Math.max(0, item.ageMs ?? 0);
      if (!this.#live(observedAt, now)) continue;
      const envKey = compositeKey(item.namespace, item.envName);
      let bucket = this.#byEnv.get(envKey);
      if (bucket === undefined) {
        bucket = { members: new Map(), oldestObservedAt: observedAt };
        this.#byEnv.set(envKey, bucket);
      }
      const recordKey = compositeKey(item.clusterId, item.memberPool);
      const held = bucket.members.get(recordKey);
      if (held !== undefined && held.observedAt > observedAt) continue;
      if (held === undefined) this.#size++;
      else this.#byCluster.get(held.capacity.clusterId)?.delete(held);
      const record: StoredRecord = { capacity: Object.freeze(copyCapacity(item)), observedAt };
      bucket.members.set(recordKey, record);
      bucket.oldestObservedAt = Math.min(bucket.oldestObservedAt, observedAt);
      let mine = this.#byCluster.get(item.clusterId);
      if (mine === undefined) this.#byCluster.set(item.clusterId, (mine = new Set()));
      mine.add(record);
    }
  }

  /** Drops the records of these members at once (their cluster no longer reports them); answers how many went. */
  remove(members: Iterable<Pick<Capacity, 'clusterId' | 'namespace' | 'envName' | 'memberPool'>>): number {
    let removed = 0;
    for (const member of members) {
      const envKey = compositeKey(member.namespace, member.envName);
      const bucket = this.#byEnv.get(envKey);
      const recordKey = compositeKey(member.clusterId, member.memberPool);
      const held = bucket?.members.get(recordKey);
      if (bucket === undefined || held === undefined) continue;
      bucket.members.delete(recordKey);
      this.#forget(held);
      this.#size--;
      removed++;
      if (bucket.members.size === 0) this.#byEnv.delete(envKey);
    }
    return removed;
  }

  /**
   * Every live record of `clusterId` was confirmed `ageMs` ago (its cluster
   * reported them unchanged): each is renewed to that age unless it is already
   * younger. Records already expired stay so. Answers how many live records of
   * the cluster are held.
   */
  renew(clusterId: string, ageMs: number): number {
    if (Number.isNaN(ageMs)) throw new RangeError(`ageMs is NaN for cluster ${clusterId}`);
    const now = this.#now();
    const observedAt = now - Math.max(0, ageMs);
    let live = 0;
    for (const record of this.#byCluster.get(clusterId) ?? []) {
      if (!this.#live(record.observedAt, now)) continue;
      live++;
      if (record.observedAt < observedAt) record.observedAt = observedAt;
    }
    return live;
  }

  /** Drops every expired record; returns how many went. */
  prune(): number {
    const now = this.#now();
    let removed = 0;
    for (const [envKey, bucket] of this.#byEnv) removed += this.#dropExpired(envKey, bucket, now);
    return removed;
  }

  /** Every live record, local and foreign, sorted by cluster, namespace, env, pool. */
  snapshot(): CapacityRecord[] {
    const now = this.#now();
    const out: CapacityRecord[] = [];
    for (const [envKey, bucket] of this.#byEnv) {
      this.#dropExpired(envKey, bucket, now);
      for (const record of bucket.members.values()) out.push(readBack(record, now));
    }
    return out.sort(compareFullIdentity);
  }

  /**
   * Live records of the Env in clusters other than this one, sorted by
   * cluster then pool: the view mirrored into `SandboxEnv.status.clusters`.
   */
  foreignMembers(namespace: string, env: string): CapacityRecord[] {
    const now = this.#now();
    const out: CapacityRecord[] = [];
    for (const record of this.#liveMembers(namespace, env, now)) {
      if (record.capacity.clusterId !== this.localClusterId) out.push(readBack(record, now));
    }
    return out.sort(compareIdentity);
  }

  /** Idle summed over this cluster's live members of the Env in `group` ('' = every group). */
  localIdle(namespace: string, env: string, group = ''): number {
    let total = 0;
    for (const { capacity } of this.#liveMembers(namespace, env, this.#now())) {
      if (capacity.clusterId === this.localClusterId && inGroup(capacity, group)) total += capacity.idle;
    }
    return total;
  }

  /**
   * Whether some live local member of the Env in `group` can scale up. Lets a
   * router keep a create local (the local autoscaler will react) rather than
   * spill it to a foreign cluster that could only scale up too.
   */
  localCanGrow(namespace: string, env: string, group = ''): boolean {
    for (const { capacity } of this.#liveMembers(namespace, env, this.#now())) {
      if (capacity.clusterId === this.localClusterId && inGroup(capacity, group) && canGrow(capacity)) return true;
    }
    return false;
  }

  /**
   * The best live, schedulable member of the Env in `group` ('' = any) in
   * another cluster, ranked by {@link compareForeignCandidates}; undefined
   * when none qualifies.
   */
  bestForeignMember(namespace: string, env: string, group = ''): ForeignChoice | undefined {
    let best: Readonly<Capacity> | undefined;
    for (const { capacity } of this.#liveMembers(namespace, env, this.#now())) {
      if (capacity.clusterId === this.localClusterId || !inGroup(capacity, group) || !schedulable(capacity)) continue;
      if (best === undefined || compareForeignCandidates(capacity, best) < 0) best = capacity;
    }
    if (best === undefined) return undefined;
    return { clusterId: best.clusterId, memberPool: best.memberPool, idle: best.idle > 0 ? best.idle : 0 };
  }

  /** The Env's records, every one of them live once this returns. */
  #liveMembers(namespace: string, env: string, now: number): Iterable<StoredRecord> {
    const envKey = compositeKey(namespace, env);
    const bucket = this.#byEnv.get(envKey);
    if (bucket === undefined) return [];
    this.#dropExpired(envKey, bucket, now);
    return bucket.members.values();
  }

  #dropExpired(envKey: string, bucket: EnvBucket, now: number): number {
    if (this.#live(bucket.oldestObservedAt, now)) return 0;
    let removed = 0;
    let oldest = Number.POSITIVE_INFINITY;
    for (const [recordKey, record] of bucket.members) {
      if (this.#live(record.observedAt, now)) {
        oldest = Math.min(oldest, record.observedAt);
      } else {
        bucket.members.delete(recordKey);
        this.#forget(record);
        removed++;
      }
    }
    bucket.oldestObservedAt = oldest;
    this.#size -= removed;
    if (bucket.members.size === 0) this.#byEnv.delete(envKey);
    return removed;
  }

  #forget(record: StoredRecord): void {
    const mine = this.#byCluster.get(record.capacity.clusterId);
    mine?.delete(record);
    if (mine?.size === 0) this.#byCluster.delete(record.capacity.clusterId);
  }

  #live(observedAt: number, now: number): boolean {
    return now - observedAt < this.ttlMs;
  }
}

function inGroup(capacity: Capacity, group: string): boolean {
  return group === '' || capacity.scalingGroup === group;
}

/** Length-prefixed so that no two different tuples share a key, whatever the ids contain. */
function compositeKey(...parts: string[]): string {
  return parts.map((part) => `${part.length}:${part}`).join('');
}

/** Copies only the record's own fields: the caller's object (and its ageMs) is not retained. */
function copyCapacity(item: Capacity): Capacity {
  return {
    clusterId: item.clusterId,
    namespace: item.namespace,
    envName: item.envName,
    memberPool: item.memberPool,
    scalingGroup: item.scalingGroup,
    idle: item.idle,
    running: item.running,
    pending: item.pending,
    desired: item.desired,
    autoscalingEnabled: item.autoscalingEnabled,
    capacity: item.capacity,
    saturatedForMs: item.saturatedForMs,
  };
}

function readBack(record: StoredRecord, now: number): CapacityRecord {
  return { ...record.capacity, ageMs: now - record.observedAt };
}

function compareFullIdentity(a: Capacity, b: Capacity): number {
  if (a.clusterId !== b.clusterId) return a.clusterId < b.clusterId ? -1 : 1;
  if (a.namespace !== b.namespace) return a.namespace < b.namespace ? -1 : 1;
  if (a.envName !== b.envName) return a.envName < b.envName ? -1 : 1;
  return compareIdentity(a, b);
}

function describe(item: Capacity): string {
  return `${item.clusterId}/${item.namespace}/${item.envName}/${item.memberPool}`;
}
