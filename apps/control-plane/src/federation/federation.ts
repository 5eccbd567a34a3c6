// Federation in one place: the CapacityRegistry (this cluster's records from
// the SandboxEnv reconciler, the other clusters' from the hub), the gauges
// rewritten from each snapshot, and — in multi-cluster mode only (a cluster
// id and a hub URL) — the hub connections, the Reporter (leader-only) and the
// Watcher (every replica, for its claim router).
import type { FederationRecord, ForeignClusterMember } from '@warmpool/api';
import { FederationGauges, publishMetrics, CapacityRegistry, toForeignClusterMember } from '@warmpool/federation';
import { closeInOrder, type Logger } from '@warmpool/runtime';
import type { Redis } from 'ioredis';
import type { Registry as PromRegistry } from 'prom-client';
import { DEFAULT_FEDERATION_PREFIX, FederationKeys } from './keys.js';
import { FederationMetrics } from './metrics.js';
import { describeRedis, type RedisSettings } from '../redis/connection.js';
import { hubConnection } from './redis.js';
import { FederationReporter } from './reporter.js';
import { FederationWatcher } from './watcher.js';

export const FEDERATION_DEFAULTS = {
  intervalMs: 2_000,
  /** 3 × interval: a cluster survives two lost reports. */
  ttlFactor: 3,
  prefix: DEFAULT_FEDERATION_PREFIX,
  /** The id of this cluster's records when no --cluster-id is given (single-cluster). */
  singleClusterId: 'local',
} as const;

export interface HubSettings {
  /** Where the hub is and how to log in (--federation-redis-url and its password and CA files). */
  redis: RedisSettings;
  /** Key prefix on the hub (default `warmpool:federation`). */
  prefix?: string;
}

export interface FederationOptions {
  /** This cluster's id (FEDERATION_DEFAULTS.singleClusterId without --cluster-id). */
  clusterId: string;
  intervalMs?: number;
  ttlMs?: number;
  /** Multi-cluster mode; undefined: nothing is started and only local records are held. */
  hub?: HubSettings;
  promRegistry: PromRegistry;
  logger: Logger;
}

type LocalRecord = Omit<FederationRecord, 'clusterId'>;

export class Federation {
  readonly clusterId: string;
  readonly registry: CapacityRegistry;
  readonly intervalMs: number;
  readonly ttlMs: number;
  readonly keys: FederationKeys | undefined;
  readonly reporter: FederationReporter | undefined;
  readonly watcher: FederationWatcher | undefined;
  readonly metrics: FederationMetrics;
  readonly #gauges: FederationGauges;
  readonly #redis: Redis | undefined;
  readonly #subscriber: Redis | undefined;
  readonly #logger: Logger;
  /** Where the hub is, for logs (never a password). */
  readonly #hubDescription: string | undefined;
  #local: readonly LocalRecord[] = [];

  constructor(options: FederationOptions) {
    this.clusterId = options.clusterId;
    this.intervalMs = options.intervalMs ?? FEDERATION_DEFAULTS.intervalMs;
    this.ttlMs = options.ttlMs ?? FEDERATION_DEFAULTS.ttlFactor * this.intervalMs;
    this.#logger = options.logger;
    this.registry = new CapacityRegistry({ localClusterId: this.clusterId, ttlMs: this.ttlMs });
    this.#gauges = new FederationGauges(options.promRegistry);
    this.metrics = new FederationMetrics(
      options.promRegistry,
      () => this.registry.snapshot().filter((r) => r.clusterId !== this.clusterId).length,
    );
    const hub = options.hub;
    if (hub === undefined) return;
    this.keys = new FederationKeys(hub.prefix ?? FEDERATION_DEFAULTS.prefix);
    this.#hubDescription = describeRedis(hub.redis);
    this.#redis = hubConnection(hub.redis);
    this.#subscriber = hubConnection(hub.redis, { subscriber: true });
    for (const connection of [this.#redis, this.#subscriber]) {
      connection.on('error', (err: Error) =>
        options.logger.debug('federation hub connection error', { err: err.message }),
      );
    }
    this.reporter = new FederationReporter({
      redis: this.#redis,
      keys: this.keys,
      clusterId: this.clusterId,
      intervalMs: this.intervalMs,
      ttlMs: this.ttlMs,
      records: () => this.#local,
      logger: options.logger,
      metrics: this.metrics,
    });
    this.watcher = new FederationWatcher({
      redis: this.#redis,
      subscriber: this.#subscriber,
      keys: this.keys,
      registry: this.registry,
      intervalMs: this.intervalMs,
      logger: options.logger,
      onUpdate: () => this.#publish(),
      metrics: this.metrics,
    });
  }

  /** Multi-cluster mode: the hub is configured. */
  get enabled(): boolean {
    return this.keys !== undefined;
  }

  /** This cluster's records as of now: held as local (never foreign) and reported while leading. */
  setLocal(records: readonly LocalRecord[]): void {
    this.#local = records;
    this.registry.upsert(records.map((r) => ({ clusterId: this.clusterId, ...r })));
    this.#publish();
  }

  /**
   * `SandboxEnv.status.clusters`: the live foreign members, without their age (it would make every status write a
   * change).
   */
  foreignMembers(namespace: string, env: string): ForeignClusterMember[] {
    return this.registry.foreignMembers(namespace, env).map(toForeignClusterMember);
  }

  /** Connects to the hub and starts watching (every replica). Never throws: a hub that is down is retried. */
  async start(): Promise<void> {
    if (!this.enabled) return;
    await Promise.all([this.#redis, this.#subscriber].map((c) => c?.connect().catch(() => undefined)));
    await this.watcher?.start();
    this.#logger.info('federation on', {
      clusterId: this.clusterId,
      hub: this.#hubDescription,
      prefix: this.keys?.prefix,
      intervalMs: this.intervalMs,
      ttlMs: this.ttlMs,
    });
  }

  /** Leader-only: report this cluster's capacity for the term `signal` bounds. */
  lead(signal: AbortSignal): void {
    if (signal.aborted) return;
    signal.addEventListener('abort', () => void this.stopLeading(), { once: true });
    this.reporter?.start();
  }

  async stopLeading(): Promise<void> {
    await this.reporter?.stop();
  }

  async close(): Promise<void> {
    await closeInOrder(
      'federation',
      [
        ['reporter', () => this.reporter?.stop()],
        ['watcher', () => this.watcher?.stop()],
        ['hub', () => this.#redis?.disconnect()],
        ['hub subscriber', () => this.#subscriber?.disconnect()],
        ['gauges', () => this.#gauges.close()],
        ['metrics', () => this.metrics.close()],
      ],
      this.#logger,
    );
  }

  #publish(): void {
    publishMetrics(this.registry, this.#gauges);
  }
}
