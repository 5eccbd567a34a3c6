// Publishes this cluster's capacity to the hub: every interval, one key per
// federation record with a PX TTL and the cluster's index of those keys, all
// in one pipeline; then a hint on the channel so watchers
// read it at once instead of at their next full read. A cluster that stops
// reporting (dead, paused, partitioned) disappears by itself when the TTLs run out.
import type { FederationEntry, FederationHint, FederationRecord } from '@warmpool/api';
import { messageOf } from '@warmpool/runtime';
import type { Logger } from '@warmpool/runtime';
import type { Redis } from 'ioredis';
import type { FederationKeys } from './keys.js';
import type { FederationMetrics } from './metrics.js';
import { OnceLogger } from './redis.js';

export interface ReporterOptions {
  redis: Redis;
  keys: FederationKeys;
  clusterId: string;
  intervalMs: number;
  ttlMs: number;
  /** This cluster's records as of now (without the cluster id). */
  records: () => ReadonlyArray<Omit<FederationRecord, 'clusterId'>>;
  logger: Logger;
  metrics?: FederationMetrics;
}

export class FederationReporter {
  readonly #options: ReporterOptions;
  readonly #health = new OnceLogger();
  #timer: NodeJS.Timeout | undefined;
  #inFlight: Promise<void> | undefined;
  #reports = 0;

  constructor(options: ReporterOptions) {
    this.#options = options;
  }

  get running(): boolean {
    return this.#timer !== undefined;
  }

  /** Reports written so far. */
  get reports(): number {
    return this.#reports;
  }

  start(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => this.#tick(), this.#options.intervalMs);
    this.#timer.unref();
    this.#tick();
  }

  /** Stops reporting; what was written ages out after its TTL. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#inFlight;
  }

  /** Reports now (also what each tick does); rejects when the hub did not take it. */
  async report(): Promise<void> {
    const { redis, keys, clusterId, ttlMs } = this.#options;
    const records = this.#options.records();
    const ttl = String(Math.max(1, Math.round(ttlMs)));
    const pipeline = redis.pipeline();
    const written: string[] = [];
    for (const local of records) {
      const record: FederationRecord = { clusterId, ...local };
      const key = keys.record(record);
      const entry: FederationEntry = { ttlMs: Math.round(ttlMs), record };
      pipeline.set(key, JSON.stringify(entry), 'PX', ttl);
      written.push(key);
    }
    pipeline.set(keys.index(clusterId), JSON.stringify(written), 'PX', ttl);
    const hint: FederationHint = { clusterId };
    pipeline.publish(keys.hintChannel, JSON.stringify(hint));
    const replies = await pipeline.exec();
    for (const [err] of replies ?? []) if (err) throw err;
    this.#reports++;
  }

  #tick(): void {
    if (this.#inFlight !== undefined) return; // a slow hub: one report at a time
    const { logger, clusterId } = this.#options;
    this.#inFlight = this.report()
      .then(
        () => {
          this.#options.metrics?.report(true);
          this.#health.succeeded(() => logger.info('federation hub reachable again: reporting', { clusterId }));
        },
        (err: unknown) => {
          this.#options.metrics?.report(false);
          this.#health.failed(() =>
            logger.warn(
              'federation hub not reachable: not reporting (retrying every interval; local claims are unaffected)',
              { clusterId, err: messageOf(err) },
            ),
          );
        },
      )
      .finally(() => {
        this.#inFlight = undefined;
      });
  }
}
