// Keeps the CapacityRegistry fresh with the other clusters' records: at once on a hint
// (that cluster's index, then its records, in one round trip), and by a full
// read every interval (SCAN over the index keys, never KEYS) so a lost hint
// costs at most one interval. The full read skips a cluster whose hint was
// read within the last interval: while hints flow, each record is read once
// per report, not twice. Each record's age is taken from Redis itself:
// the TTL it was written with minus its remaining PTTL, so no clock of any
// cluster moves an expiry. Records of this cluster are skipped: the local view
// comes straight from this cluster's own caches.
import { federationEntrySchema, federationHintSchema, type FederationEntry } from '@warmpool/api';
import type { CapacityRegistry } from '@warmpool/federation';
import { messageOf } from '@warmpool/runtime';
import type { Logger } from '@warmpool/runtime';
import type { Redis } from 'ioredis';
import type { FederationKeys } from './keys.js';
import type { FederationMetrics } from './metrics.js';
import { OnceLogger } from './redis.js';

// KEYS[1]: a cluster's index key. Answers { value, pttl, value, pttl, ... } for every record key it lists.
const READ_CLUSTER = `
local index = redis.call('GET', KEYS[1])
if not index then return {} end
local ok, keys = pcall(cjson.decode, index)
if not ok or type(keys) ~= 'table' then return {} end
local out = {}
for _, key in ipairs(keys) do
  if type(key) == 'string' then
    local value = redis.call('GET', key)
    if value then
      out[#out + 1] = value
      out[#out + 1] = redis.call('PTTL', key)
    end
  end
end
return out`;

export interface WatcherOptions {
  redis: Redis;
  /** A connection of its own, for SUBSCRIBE. */
  subscriber: Redis;
  keys: FederationKeys;
  registry: CapacityRegistry;
  intervalMs: number;
  logger: Logger;
  /** After each change of the foreign view (hint or full read). */
  onUpdate?: () => void;
  metrics?: FederationMetrics;
}

export class FederationWatcher {
  readonly #options: WatcherOptions;
  readonly #health = new OnceLogger();
  #timer: NodeJS.Timeout | undefined;
  #fullRead: Promise<void> | undefined;
  #invalid = 0;
  /** performance.now() of the last hinted read per cluster. */
  readonly #hintedAt = new Map<string, number>();

  constructor(options: WatcherOptions) {
    this.#options = options;
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

  /** Reads every cluster's records (one SCAN walk, then one round trip per cluster). */
  readAll(): Promise<void> {
    this.#fullRead ??= this.#readAll().finally(() => {
      this.#fullRead = undefined;
    });
    return this.#fullRead;
  }

  /** Reads one cluster's records into the registry; answers how many were taken. */
  async readCluster(clusterId: string): Promise<number> {
    const { redis, keys, registry } = this.#options;
    if (clusterId === registry.localClusterId) return 0;
    const flat = (await redis.eval(READ_CLUSTER, 1, keys.index(clusterId))) as Array<string | number>;
    const observations: Array<FederationEntry['record'] & { ageMs: number }> = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const entry = parseEntry(String(flat[i]));
      const pttl = Number(flat[i + 1]);
      // -1: no TTL (not written by a reporter), -2: gone meanwhile. Neither is a live record.
      if (entry === undefined || entry.record.clusterId !== clusterId || !(pttl > 0)) {
        if (entry === undefined) {
          this.#invalid++;
          this.#options.metrics?.invalidEntries(1);
        }
        continue;
      }
      observations.push({ ...entry.record, ageMs: Math.max(0, entry.ttlMs - pttl) });
    }
    registry.upsert(observations);
    return observations.length;
  }

  async #readAll(): Promise<void> {
    const { redis, keys, logger } = this.#options;
    try {
      const clusters = new Set<string>();
      let cursor = '0';
      do {
        const [next, found] = await redis.scan(cursor, 'MATCH', keys.indexPattern, 'COUNT', 1000);
        cursor = next;
        for (const key of found) {
          const cluster = keys.clusterOfIndex(key);
          if (cluster !== undefined) clusters.add(cluster);
        }
      } while (cursor !== '0');
      const recent = performance.now() - this.#options.intervalMs;
      for (const cluster of clusters) {
        if ((this.#hintedAt.get(cluster) ?? Number.NEGATIVE_INFINITY) > recent) continue;
        await this.readCluster(cluster);
      }
      for (const [cluster, at] of this.#hintedAt) if (at <= recent) this.#hintedAt.delete(cluster);
      this.#options.registry.prune();
      this.#options.metrics?.read('full', true);
      this.#health.succeeded(() => logger.info('federation hub reachable again: watching'));
      this.#options.onUpdate?.();
    } catch (err) {
      this.#options.metrics?.read('full', false);
      this.#options.registry.prune();
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
    const cluster = hint.data.clusterId;
    this.readCluster(cluster).then(
      () => {
        this.#options.metrics?.read('hint', true);
        this.#hintedAt.set(cluster, performance.now());
        this.#options.onUpdate?.();
      },
      () => this.#options.metrics?.read('hint', false),
    );
  }
}

function parseEntry(value: string): FederationEntry | undefined {
  try {
    const parsed = federationEntrySchema.safeParse(JSON.parse(value));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
