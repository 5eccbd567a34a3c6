// The SandboxWarmPoolAutoscaler, composed: the informer over autoscalers
// (every replica keeps it: the claim recorder counts only autoscaled pools),
// the claim recorder (every replica, on each fresh claim the pipeline serves),
// the leader-only controller and its watch wiring, and the two runnables the
// manager runs. Needs the claim pipeline's Redis: without claims there is
// nothing to size from.
import {
  type KubeObject,
  SandboxWarmPoolAutoscalerType,
  type NodeInventory,
  type SandboxTemplate,
  type SandboxWarmPool,
  type SandboxWarmPoolAutoscaler,
} from '@warmpool/api';
import { createInformer, type Informer, type KubeLogger, type KubeConfig } from '@warmpool/kube';
import type { Clock, Logger } from '@warmpool/runtime';
import { Redis } from 'ioredis';
import type { Registry } from 'prom-client';
import type { ControlPlaneOptions } from '../../options.js';
import { cachesSynced, type Runnable } from '../../manager/runnable.js';
import type { Shared } from '../../subsystems.js';
import type { WarmPoolDriver } from '../warmpool/driver.js';
import type { ClaimOrder, ServedGrant } from '../../provisioning/claim-service.js';
import { redisOptions, type RedisSettings } from '../../redis/connection.js';
import { KubeScaleTarget, type ScaleTarget } from '../sandboxenvs/autoscaler.js';
import { ClaimCounter } from './claim-counter.js';
import { PoolAutoscalerController, type PoolAutoscalerSettings } from './controller.js';
import { PoolAutoscalerMetrics } from './metrics.js';
import { KubeAutoscalerStatusWriter, type AutoscalerStatusWriter } from './status-writer.js';
import { watchPoolAutoscalers } from './watch.js';

export interface PoolAutoscalerOptions {
  kubeConfig: KubeConfig;
  pools: Informer<SandboxWarmPool>;
  templates: Informer<SandboxTemplate>;
  inventories: Informer<NodeInventory>;
  redis: RedisSettings;
  /** Key prefix in Redis (the claim pipeline's). */
  prefix: string;
  registry: Registry;
  staleAfterMs: number;
  settings?: Partial<PoolAutoscalerSettings> | undefined;
  /** Default: the SandboxWarmPool scale subresource. */
  scaleTarget?: ScaleTarget | undefined;
  writer?: AutoscalerStatusWriter | undefined;
  clock: Clock;
  logger: Logger;
  kubeLogger: KubeLogger;
}

export class PoolAutoscaler {
  readonly informer: Informer<SandboxWarmPoolAutoscaler>;
  readonly controller: PoolAutoscalerController;
  readonly metrics: PoolAutoscalerMetrics;
  readonly #counter: ClaimCounter;
  readonly #redis: Redis;
  readonly #clock: Clock;
  readonly #logger: Logger;
  /** Autoscaled pools, `namespace/name`, from the informer: only their claims are recorded in Redis. */
  #targets = new Set<string>();
  #lostFlushes = 0;

  constructor(options: PoolAutoscalerOptions) {
    this.#clock = options.clock;
    this.#logger = options.logger.child({ controller: 'pool-autoscaler' });
    this.#redis = new Redis(redisOptions(options.redis, { lazyConnect: true, maxRetriesPerRequest: 1 }));
    this.#redis.on('error', () => undefined); // the pipeline's own connection reports Redis trouble
    this.metrics = new PoolAutoscalerMetrics(options.registry);
    this.#counter = new ClaimCounter(this.#redis, options.prefix, {
      now: () => this.#clock.now(),
      onLost: (err, claims) => {
        this.metrics.uncounted(claims);
        // Rate-limited: a Redis outage loses every flush's counts; the metric has the whole loss.
        if (this.#lostFlushes++ % 100 === 0)
          this.#logger.warn('could not count claims for the pool autoscaler', { claims, err });
      },
    });
    this.informer = createInformer<SandboxWarmPoolAutoscaler>(options.kubeConfig, SandboxWarmPoolAutoscalerType, {
      logger: options.kubeLogger,
    });
    const retarget = (): void => {
      this.#targets = new Set(
        this.informer.lister
          .list()
          .map((a) => `${a.metadata?.namespace ?? ''}/${String(a.spec?.scaleTargetRef?.name ?? '')}`),
      );
    };
    this.informer.addEventHandler({ onAdd: retarget, onUpdate: retarget, onDelete: retarget });
    this.controller = new PoolAutoscalerController({
      autoscalers: this.informer.lister,
      pools: options.pools.lister,
      templates: options.templates.lister,
      inventories: options.inventories.lister,
      counter: this.#counter,
      target: options.scaleTarget ?? new KubeScaleTarget(options.kubeConfig),
      writer: options.writer ?? new KubeAutoscalerStatusWriter(options.kubeConfig),
      metrics: this.metrics,
      staleAfterMs: options.staleAfterMs,
      settings: options.settings,
      clock: options.clock,
      logger: this.#logger,
    });
    watchPoolAutoscalers(this.controller, this.informer);
  }

  /**
   * A claim the pipeline served (every replica): counted in the metrics always, and in Redis for an autoscaled
   * pool. Only fresh claims count: a replayed claimRef was counted when it was served.
   */
  readonly served = (order: ClaimOrder, grant: ServedGrant): void => {
    if (grant.fresh !== true) return;
    this.metrics.claim(order.namespace, order.warmPool, grant.tier);
    if (!this.#targets.has(`${order.namespace}/${order.warmPool}`)) return;
    this.#counter.record(order.namespace, order.warmPool, grant.tier, this.#clock.now());
  };

  /**
   * Stops the controller, writes the counts still gathering and waits for those in flight, then closes its
   * connection; each step isolated.
   */
  async close(): Promise<void> {
    await this.controller.close().catch((err: unknown) => this.#logger.warn('pool autoscaler close failed', { err }));
    await this.#counter.close();
    this.#redis.disconnect();
  }
}

/** Undefined without claims (no `claims` settings: no Redis, no claims to count), said once in the log. */
export function createPoolAutoscalerOf(
  shared: Shared,
  options: Pick<ControlPlaneOptions, 'claims' | 'poolAutoscaler' | 'scaleTarget'>,
  driver: Pick<WarmPoolDriver, 'pools' | 'templates' | 'inventories' | 'reconciler'>,
): PoolAutoscaler | undefined {
  const claims = options.claims;
  if (claims === undefined) {
    shared.logger.info(
      'SandboxWarmPoolAutoscalers are not acted on: they size pools by the claims counted in the claim pipeline, which needs --redis-url',
    );
    return undefined;
  }
  return new PoolAutoscaler({
    kubeConfig: shared.kubeConfig,
    pools: driver.pools,
    templates: driver.templates,
    inventories: driver.inventories,
    redis: claims.redis,
    prefix: claims.prefix ?? 'warmpool',
    registry: shared.metrics.registry,
    staleAfterMs: driver.reconciler.settings.staleAfterMs,
    settings: options.poolAutoscaler,
    scaleTarget: options.scaleTarget,
    clock: shared.clock,
    logger: shared.logger,
    kubeLogger: shared.kubeLogger,
  });
}

/**
 * As the manager runs it: the claim counts in every replica (listed before the claim pipeline, so their Redis
 * connection closes after it), and the controller on the leader once its caches and the ones it `reads` (pools,
 * templates, inventories) have synced.
 */
export function poolAutoscalerRunnables(
  autoscaler: PoolAutoscaler,
  reads: ReadonlyArray<Informer<KubeObject>>,
): [counts: Runnable, controller: Runnable] {
  const caches = [autoscaler.informer, ...reads] as Array<Informer<KubeObject>>;
  return [
    {
      name: 'pool autoscaler claim counts',
      needsLeader: false,
      start: () => undefined,
      close: () => autoscaler.close(),
    },
    {
      name: 'pool autoscaler',
      needsLeader: true,
      async start(signal) {
        if (!(await cachesSynced(caches, signal))) return;
        signal.addEventListener('abort', () => autoscaler.controller.stopLeading(), { once: true });
        autoscaler.controller.startLeading(signal);
      },
      close: () => autoscaler.controller.close(),
    },
  ];
}
