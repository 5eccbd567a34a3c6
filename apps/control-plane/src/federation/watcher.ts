// Keeps the CapacityRegistry fresh with the other clusters' records. A hint
// makes it read that cluster's changes at once; every interval it reads the
// hub's directory (one script) and reads only the clusters whose version it
// has not seen, so a lost hint costs at most one interval and an unchanged
// fleet costs one call per interval. Each record's age is its cluster's age on
// the hub's own clock (hub-scripts.ts), so no cluster's clock moves an expiry.
// Records of this cluster are skipped: the local view comes straight from this
// cluster's own caches. A record its cluster deleted leaves the registry at
// once; every record of a cluster that stopped reporting ages out after the TTL.
import { federationHintSchema, federationRecordSchema, type FederationRecord } from '@warmpool/api';
import type { CapacityRegistry } from '@warmpool/federation';
import { messageOf } from '@warmpool/runtime';
import type { Logger } from '@warmpool/runtime';
import type { Redis } from 'ioredis';
import { isLive, parseDirectoryEntry, withHubScripts, type HubReply, type ScriptedHub } from './hub-scripts.js';
import { recordField, type FederationKeys } from './keys.js';
import type { FederationMetrics } from './metrics.js';
import { OnceLogger } from './redis.js';

export interface WatcherOptions {
  redis: Redis;
  /** A connection of its own, for SUBSCRIBE. */
  subscriber: Redis;
  keys: FederationKeys;
  registry: CapacityRegistry;
  intervalMs: number;
  logger: Logger;
  /** After each change of the foreign view (hint or periodic read). */
  onUpdate?: () => void;
  metrics?: FederationMetrics;
}

/** A record as it was and is now (undefined: not there). */
interface Change {
  was: FederationRecord | undefined;
  now: FederationRecord | undefined;
}

/** One foreign cluster as this watcher last read it. */
interface Mirror {
  epoch: string;
  version: number;
  records: Map<string, FederationRecord>;
}

export class FederationWatcher {
  readonly #options: WatcherOptions;
  readonly #hub: ScriptedHub;
  readonly #health = new OnceLogger();
  readonly #mirrors = new Map<string, Mirror>();
  /** One read per cluster at a time: a delta applies only to the version it was asked against. */
  readonly #reading = new Map<string, Promise<number>>();
  #timer: NodeJS.Timeout | undefined;
  #fullRead: Promise<void> | undefined;
  #invalid = 0;

  constructor(options: WatcherOptions) {
    this.#options = options;
    this.#hub = withHubScripts(options.redis);
  }

  /** Entries that failed their schema and were skipped. */
  get invalidEntries(): number {
    return this.#invalid;
  }

  async start(): Promise<void> {
    const { subscriber, keys, intervalMs } = this.#options;
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === keys.hintChannel) this.#onHint(message);
    });
    // ioredis re-subscribes by itself after a reconnect.
    subscriber.subscribe(keys.hintChannel).catch(() => undefined);
    this.#timer = setInterval(() => void this.readAll(), intervalMs);
    this.#timer.unref();
    void this.readAll();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#fullRead;
  }

  /** Reads the directory, then every live cluster whose version this watcher has not seen. */
  readAll(): Promise<void> {
    this.#fullRead ??= this.#readAll().finally(() => {
      this.#fullRead = undefined;
    });
    return this.#fullRead;
  }

  /** Reads one cluster's changes into the registry; answers how many of its records are live. */
  readCluster(clusterId: string): Promise<number> {
    if (clusterId === this.#options.registry.localClusterId) return Promise.resolve(0);
    const previous = this.#reading.get(clusterId) ?? Promise.resolve(0);
    const next = previous.catch(() => 0).then(() => this.#readCluster(clusterId));
    this.#reading.set(clusterId, next);
    void next
      .finally(() => {
        if (this.#reading.get(clusterId) === next) this.#reading.delete(clusterId);
      })
      .catch(() => undefined);
    return next;
  }

  async #readCluster(clusterId: string): Promise<number> {
    const { keys } = this.#options;
    const mirror = this.#mirrors.get(clusterId);
    const reply = await this.#hub.warmpoolHubReadCluster(
      keys.directory,
      keys.records(clusterId),
      keys.changes(clusterId),
      clusterId,
      mirror?.epoch ?? '',
      mirror?.version ?? -1,
    );
    const now = Number(reply[0]);
    const entry = parseDirectoryEntry(reply[1]);
    const kind = reply[2];
    if (entry === undefined) {
      // Not on the hub: what this watcher holds is no longer renewed and ages out.
      this.#mirrors.delete(clusterId);
      return 0;
    }
    // Late past its TTL: no longer renewed, so its records age out; kept to go on from when it reports again.
    if (kind === 'dead') return 0;
    const records = kind === 'full' ? new Map<string, FederationRecord>() : (mirror?.records ?? new Map());
    const changed = kind === 'full' || kind === 'delta' ? this.#apply(clusterId, records, reply.slice(3)) : [];
    const gone =
      kind === 'full' && mirror !== undefined ? [...mirror.records].filter(([field]) => !records.has(field)) : [];
    const ageMs = Math.max(0, now - entry.at);
    const { registry } = this.#options;
    // A changed record replaces the one held whatever their ages say: this read is of a later version (reads of a
    // cluster go one at a time), while two reports within the clocks' jitter can look the other way round by age.
    registry.remove([
      ...gone.map(([, record]) => record),
      ...changed.flatMap((c) => (c.was === undefined ? [] : [c.was])),
    ]);
    registry.upsert(changed.flatMap((c) => (c.now === undefined ? [] : [{ ...c.now, ageMs }])));
    const updated: Mirror = { epoch: entry.epoch, version: entry.version, records };
    this.#mirrors.set(clusterId, updated);
    this.#renew(clusterId, updated, ageMs);
    return records.size;
  }

  /** Renews the cluster's records in the registry; those that aged out meanwhile (it was late) are put back. */
  #renew(clusterId: string, mirror: Mirror, ageMs: number): void {
    const { registry } = this.#options;
    if (registry.renew(clusterId, ageMs) < mirror.records.size) {
      registry.upsert([...mirror.records.values()].map((record) => ({ ...record, ageMs })));
    }
  }

  /**
   * Applies field/value pairs (a null value: the field was deleted) to `records`, skipping what fails the schema;
   * answers what changed.
   */
  #apply(clusterId: string, records: Map<string, FederationRecord>, pairs: HubReply): Change[] {
    let invalid = 0;
    const changes: Change[] = [];
    for (let i = 0; i + 1 < pairs.length; i += 2) {
      const field = String(pairs[i]);
      const value = pairs[i + 1];
      let record = value === null || value === undefined ? undefined : parseRecord(String(value));
      // A record must be its own cluster's, at its own field: a hub writer cannot shadow another record.
      if (record !== undefined && (record.clusterId !== clusterId || recordField(record) !== field)) record = undefined;
      if (record === undefined && value !== null && value !== undefined) invalid++;
      const was = records.get(field);
      if (record === undefined) records.delete(field);
      else records.set(field, record);
      if (was !== undefined || record !== undefined) changes.push({ was, now: record });
    }
    if (invalid > 0) {
      this.#invalid += invalid;
      this.#options.metrics?.invalidEntries(invalid);
    }
    return changes;
  }

  async #readAll(): Promise<void> {
    const { keys, logger, registry } = this.#options;
    try {
      const reply = await this.#hub.warmpoolHubReadDirectory(keys.directory);
      const now = Number(reply[0]);
      const retained = new Set<string>();
      for (let i = 1; i + 1 < reply.length; i += 2) {
        const clusterId = String(reply[i]);
        const entry = parseDirectoryEntry(reply[i + 1]);
        if (entry === undefined || clusterId === registry.localClusterId) continue;
        retained.add(clusterId);
        if (!isLive(entry, now)) continue;
        const mirror = this.#mirrors.get(clusterId);
        if (mirror !== undefined && mirror.epoch === entry.epoch && mirror.version === entry.version) {
          this.#renew(clusterId, mirror, Math.max(0, now - entry.at));
        } else {
          await this.readCluster(clusterId);
        }
      }
      for (const clusterId of this.#mirrors.keys()) if (!retained.has(clusterId)) this.#mirrors.delete(clusterId);
      registry.prune();
      this.#options.metrics?.read('full', true);
      this.#health.succeeded(() => logger.info('federation hub reachable again: watching'));
      this.#options.onUpdate?.();
    } catch (err) {
      this.#options.metrics?.read('full', false);
      registry.prune();
      this.#health.failed(() =>
        logger.warn('federation hub not reachable: the foreign view ages out until it is back', {
          err: messageOf(err),
        }),
      );
      this.#options.onUpdate?.();
    }
  }

  #onHint(message: string): void {
    let hint;
    try {
      hint = federationHintSchema.safeParse(JSON.parse(message));
    } catch {
      return;
    }
    if (!hint.success) return;
    this.readCluster(hint.data.clusterId).then(
      () => {
        this.#options.metrics?.read('hint', true);
        this.#options.onUpdate?.();
      },
      () => this.#options.metrics?.read('hint', false),
    );
  }
}

function parseRecord(value: string): FederationRecord | undefined {
  try {
    const parsed = federationRecordSchema.safeParse(JSON.parse(value));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
