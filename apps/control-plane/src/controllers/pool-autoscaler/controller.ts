// The SandboxWarmPoolAutoscaler controller (leader-only): every tick, for each
// autoscaler, one step of its DemandScaler (libs/demand) on the claims its
// target pool served since the last step (ClaimCounter, across replicas) and
// the pool's refill state (the NodeInventory cache), then the pool's replicas
// through its scale subresource and the autoscaler's status. Each autoscaler
// keeps its scaler (rate window, lead time, stabilisation memory) while its
// uid and generation hold; a spec change starts a fresh one, as does a new
// leader, whose first window reads as incomplete (ClaimCounter) so it cuts
// nothing until it has counted a whole window itself.
import {
  poolAutoscalerSpecSchema,
  type NodeInventory,
  type PoolAutoscalerStatus,
  type SandboxTemplate,
  type SandboxWarmPool,
  type SandboxWarmPoolAutoscaler,
} from '@warmpool/api';
import { DemandScaler, type DemandDecision } from '@warmpool/demand';
import type { Lister } from '@warmpool/kube';
import type { Clock, Logger } from '@warmpool/runtime';
import { kubeTime } from '../kube-time.js';
import type { ScaleTarget } from '../sandboxenvs/autoscaler.js';
import { countPools, observeKeys, refOf, type PoolCounts } from '../sandboxenvs/counts.js';
import { READ_LAG_SECONDS, type ClaimCounter } from './claim-counter.js';
import type { AutoscalerReading, PoolAutoscalerMetrics } from './metrics.js';
import { statusOf, worthWriting, type StepOutcome } from './status.js';
import type { AutoscalerStatusWriter } from './status-writer.js';

export interface PoolAutoscalerSettings {
  /** How often each autoscaler steps (default 2 s): a burst is answered within one tick plus the read lag. */
  tickMs: number;
  /** The lead time assumed until boots are seen (default 10 s: conservative). */
  initialLeadTimeSeconds: number;
  /** Measured numbers in status are rewritten at most this often (default 15 s). */
  statusRefreshMs: number;
}

export const POOL_AUTOSCALER_SETTINGS: PoolAutoscalerSettings = {
  tickMs: 2_000,
  initialLeadTimeSeconds: 10,
  statusRefreshMs: 15_000,
};

export interface PoolAutoscalerControllerOptions {
  autoscalers: Lister<SandboxWarmPoolAutoscaler>;
  pools: Lister<SandboxWarmPool>;
  templates: Lister<SandboxTemplate>;
  inventories: Lister<NodeInventory>;
  counter: ClaimCounter;
  target: ScaleTarget;
  writer: AutoscalerStatusWriter;
  metrics: PoolAutoscalerMetrics;
  /** Inventories older than this serve nothing (the driver's own rule). */
  staleAfterMs: number;
  settings?: Partial<PoolAutoscalerSettings>;
  clock: Clock;
  logger: Logger;
}

interface Tracked {
  key: string;
  scaler: DemandScaler;
  /** The next whole second to read claims from. */
  readFrom: number;
  /** Warm sandboxes at the previous step, for the boots completed since. */
  idle: number | undefined;
}

/** What this leader last wrote to an autoscaler's status. */
interface Written {
  status: PoolAutoscalerStatus | undefined;
  at: number;
  lastScaleTime: string | undefined;
}

export class PoolAutoscalerController {
  readonly settings: PoolAutoscalerSettings;
  readonly #options: PoolAutoscalerControllerOptions;
  readonly #tracked = new Map<string, Tracked>();
  readonly #written = new Map<string, Written>();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #signal: AbortSignal | undefined;

  constructor(options: PoolAutoscalerControllerOptions) {
    this.#options = options;
    this.settings = { ...POOL_AUTOSCALER_SETTINGS, ...options.settings };
  }

  /** Steps every tick until `signal` aborts or stopLeading(). */
  startLeading(signal: AbortSignal): void {
    this.stopLeading();
    this.#signal = signal;
    const loop = (): void => {
      if (signal.aborted) return;
      this.#running = this.#step(signal).finally(() => {
        this.#running = undefined;
        if (!signal.aborted && this.#signal === signal) this.#timer = setTimeout(loop, this.settings.tickMs);
      });
    };
    loop();
  }

  /** Steps now rather than at the next tick (an autoscaler was added or changed); a no-op unless leading. */
  poke(): void {
    const signal = this.#signal;
    if (signal === undefined || signal.aborted || this.#running !== undefined) return;
    clearTimeout(this.#timer);
    this.startLeading(signal);
  }

  stopLeading(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#signal = undefined;
    this.#tracked.clear();
    this.#written.clear();
    this.#options.metrics.readings([]);
  }

  async close(): Promise<void> {
    this.stopLeading();
    await this.#running;
  }

  /** One pass over every autoscaler. */
  async #step(signal: AbortSignal): Promise<void> {
    const now = this.#options.clock.now();
    const seen = new Set<string>();
    const readings: AutoscalerReading[] = [];
    const autoscalers = this.#options.autoscalers.list();
    // Every pool's warm sandboxes, once per pass (shared keys shared out as SandboxWarmPool status does).
    const counts =
      autoscalers.length === 0
        ? new Map<string, PoolCounts>()
        : countPools(
            this.#options.pools.list(),
            (ns, name) => this.#options.templates.get(ns, name),
            observeKeys(this.#options.inventories.list(), now, this.#options.staleAfterMs),
          );
    await Promise.all(
      autoscalers.map(async (autoscaler) => {
        const uid = autoscaler.metadata?.uid ?? '';
        seen.add(uid);
        try {
          const idle = (pool: string): number =>
            counts.get(refOf(autoscaler.metadata?.namespace ?? '', pool))?.idle ?? 0;
          const reading = await this.#stepOne(autoscaler, idle, now, signal);
          if (reading !== undefined) readings.push(reading);
        } catch (err) {
          if (!signal.aborted)
            this.#options.logger.warn('a pool autoscaler step failed', { autoscaler: nameOf(autoscaler), err });
        }
      }),
    );
    for (const uid of this.#tracked.keys()) if (!seen.has(uid)) this.#tracked.delete(uid);
    for (const uid of this.#written.keys()) if (!seen.has(uid)) this.#written.delete(uid);
    this.#options.metrics.readings(readings);
  }

  async #stepOne(
    autoscaler: SandboxWarmPoolAutoscaler,
    idleOf: (pool: string) => number,
    now: number,
    signal: AbortSignal,
  ): Promise<AutoscalerReading | undefined> {
    const namespace = autoscaler.metadata?.namespace ?? '';
    const uid = autoscaler.metadata?.uid ?? '';
    const parsed = poolAutoscalerSpecSchema.safeParse(autoscaler.spec);
    if (!parsed.success) {
      const message = `spec refused: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`;
      await this.#write(autoscaler, { able: { ok: false, reason: 'InvalidSpec', message } }, now, signal);
      return undefined;
    }
    const spec = parsed.data;
    const poolName = spec.scaleTargetRef.name;
    const pool = this.#options.pools.get(namespace, poolName);
    const key = JSON.stringify([autoscaler.metadata?.generation, spec]);
    let tracked = this.#tracked.get(uid);
    const toSecond = Math.floor(now / 1000) - READ_LAG_SECONDS;
    if (tracked === undefined || tracked.key !== key) {
      tracked = {
        key,
        scaler: new DemandScaler({
          minReplicas: spec.minReplicas,
          maxReplicas: spec.maxReplicas,
          targetHitRatio: spec.targetHitRatio,
          windowSeconds: spec.claimWindowSeconds,
          scaleDownStabilizationSeconds: spec.behavior.scaleDown.stabilizationWindowSeconds,
          leadTime: {
            initialSeconds: this.settings.initialLeadTimeSeconds,
            minSeconds: this.settings.tickMs / 1000,
          },
        }),
        // The first read covers a whole claim window, so a new leader starts on what its peers counted.
        readFrom: toSecond - spec.claimWindowSeconds,
        idle: undefined,
      };
      this.#tracked.set(uid, tracked);
    }
    if (pool === undefined || pool.metadata?.deletionTimestamp !== undefined) {
      const message = `SandboxWarmPool ${namespace}/${poolName} not found`;
      await this.#write(autoscaler, { able: { ok: false, reason: 'TargetNotFound', message } }, now, signal);
      return undefined;
    }
    if (toSecond <= tracked.readFrom) return undefined; // less than a second since the last step
    const current = Math.max(0, pool.spec?.replicas ?? 1);
    const [counts] = (await this.#options.counter.read([{ namespace, pool: poolName }], tracked.readFrom, toSecond))
      .counts;
    const since = tracked.readFrom;
    tracked.readFrom = toSecond;
    const idle = idleOf(poolName);
    const decision = tracked.scaler.step({
      at: toSecond,
      since,
      current,
      warmClaims: counts?.warm ?? 0,
      coldClaims: counts?.cold ?? 0,
      countsComplete: counts?.complete ?? false,
      owed: Math.max(0, current - idle),
      booted: tracked.idle === undefined ? 0 : Math.max(0, idle - tracked.idle + (counts?.warm ?? 0)),
    });
    tracked.idle = idle;
    const outcome = await this.#scale(namespace, poolName, current, decision, now, signal);
    await this.#write(autoscaler, outcome, now, signal);
    return {
      namespace,
      pool: poolName,
      hitRatio: decision.hitRatio,
      claimRate: decision.claimRate,
      leadTimeSeconds: decision.leadTimeSeconds,
      desired: decision.replicas,
      recommended: decision.recommended,
    };
  }

  async #scale(
    namespace: string,
    pool: string,
    current: number,
    decision: DemandDecision,
    now: number,
    signal: AbortSignal,
  ): Promise<StepOutcome> {
    if (decision.replicas === current)
      return { able: { ok: true, reason: 'ReadyForNewScale' }, decision, currentReplicas: current };
    try {
      await this.#options.target.scale(namespace, pool, decision.replicas, signal);
      this.#options.metrics.scaled('ok');
      this.#options.logger.info('scaled a pool for its demand', {
        pool: refOf(namespace, pool),
        from: current,
        to: decision.replicas,
        reason: decision.reason,
        claimRate: decision.claimRate,
        leadTimeSeconds: decision.leadTimeSeconds,
      });
      return {
        able: { ok: true, reason: 'SucceededRescale' },
        decision,
        currentReplicas: decision.replicas,
        lastScaleTime: kubeTime(now),
      };
    } catch (err) {
      this.#options.metrics.scaled('error');
      const message = `could not set replicas ${decision.replicas}: ${err instanceof Error ? err.message : String(err)}`;
      return { able: { ok: false, reason: 'FailedUpdateScale', message }, decision, currentReplicas: current };
    }
  }

  async #write(
    autoscaler: SandboxWarmPoolAutoscaler,
    outcome: StepOutcome,
    now: number,
    signal: AbortSignal,
  ): Promise<void> {
    const uid = autoscaler.metadata?.uid ?? '';
    const written = this.#written.get(uid) ?? { status: autoscaler.status, at: 0, lastScaleTime: undefined };
    const lastScaleTime = outcome.lastScaleTime ?? written.lastScaleTime;
    const status = statusOf(autoscaler, { ...outcome, ...(lastScaleTime !== undefined ? { lastScaleTime } : {}) }, now);
    if (!worthWriting(written.status, status, now - written.at, this.settings.statusRefreshMs)) {
      this.#written.set(uid, { ...written, lastScaleTime });
      return;
    }
    const result = await this.#options.writer.write(autoscaler, status, signal);
    if (result.outcome !== 'written') {
      // Gone, changed since the cache read, or replaced by a namesake: nothing was written, and nothing is remembered
      // as written, so the next tick (on the cache as it is then) writes again if it still has to.
      this.#options.logger.debug(
        'pool autoscaler status not written: the autoscaler is not the one it was computed from',
        {
          autoscaler: nameOf(autoscaler),
          resourceVersion: autoscaler.metadata?.resourceVersion,
          outcome: result.outcome,
        },
      );
      this.#written.set(uid, { ...written, lastScaleTime });
      return;
    }
    this.#written.set(uid, { status, at: now, lastScaleTime });
  }
}

function nameOf(autoscaler: SandboxWarmPoolAutoscaler): string {
  return refOf(autoscaler.metadata?.namespace ?? '', autoscaler.metadata?.name ?? '');
}
