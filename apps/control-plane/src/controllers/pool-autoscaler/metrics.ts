// The demand metrics. `warmpool_pool_claims_total` counts every fresh claim in
// the replica that served it, whatever its front door (HTTP, SandboxClaim, Env,
// Sandbox API, a peer cluster), by pool and tier: sum it over the replicas for
// a pool's hit ratio. The `warmpool_pool_autoscaler_*` gauges are the leader's,
// one series per SandboxWarmPoolAutoscaler's target pool, removed when it goes.
// The pool's namespace is `pool_namespace`: Prometheus attaches the scraped
// pod's as `namespace`.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ClaimTier } from './claim-counter.js';

const LABELS = ['pool_namespace', 'pool'] as const;

export interface AutoscalerReading {
  namespace: string;
  pool: string;
  hitRatio: number | undefined;
  claimRate: number;
  leadTimeSeconds: number;
  desired: number;
  recommended: number;
}

export class PoolAutoscalerMetrics {
  readonly #claims: Counter;
  readonly #hitRatio: Gauge;
  readonly #claimRate: Gauge;
  readonly #leadTime: Gauge;
  readonly #desired: Gauge;
  readonly #recommended: Gauge;
  readonly #scales: Counter;
  readonly #uncounted: Counter;
  #series = new Set<string>();

  constructor(registry: Registry) {
    const registers = [registry];
    this.#claims = new Counter({
      name: 'warmpool_pool_claims_total',
      help: 'Fresh claims this replica served, by pool and tier (warm: handed over from the pool; cold: booted for the claim)',
      labelNames: [...LABELS, 'tier'],
      registers,
    });
    this.#hitRatio = new Gauge({
      name: 'warmpool_pool_autoscaler_hit_ratio',
      help: "Warm / all claims of the autoscaled pool over its stabilization window (the leader's; absent without claims)",
      labelNames: LABELS,
      registers,
    });
    this.#claimRate = new Gauge({
      name: 'warmpool_pool_autoscaler_claim_rate',
      help: 'Claims per second of the autoscaled pool over its claim window, or its latest burst',
      labelNames: LABELS,
      registers,
    });
    this.#leadTime = new Gauge({
      name: 'warmpool_pool_autoscaler_lead_time_seconds',
      help: "The autoscaled pool's refill lead time in use",
      labelNames: LABELS,
      registers,
    });
    this.#desired = new Gauge({
      name: 'warmpool_pool_autoscaler_desired_replicas',
      help: 'Replicas the autoscaler set or holds for the pool',
      labelNames: LABELS,
      registers,
    });
    this.#recommended = new Gauge({
      name: 'warmpool_pool_autoscaler_recommended_replicas',
      help: "The demand model's replicas before scale-down stabilisation",
      labelNames: LABELS,
      registers,
    });
    this.#scales = new Counter({
      name: 'warmpool_pool_autoscaler_scales_total',
      help: 'Scale subresource writes by the pool autoscaler, by outcome',
      labelNames: ['outcome'],
      registers,
    });
    this.#uncounted = new Counter({
      name: 'warmpool_pool_autoscaler_uncounted_claims_total',
      help: "Fresh claims of autoscaled pools whose count Redis refused or did not confirm (a timed-out write may still have landed); the leader's claim rate may read low",
      registers,
    });
  }

  claim(namespace: string, pool: string, tier: ClaimTier): void {
    this.#claims.inc({ pool_namespace: namespace, pool, tier });
  }

  uncounted(claims: number): void {
    this.#uncounted.inc(claims);
  }

  scaled(outcome: 'ok' | 'error'): void {
    this.#scales.inc({ outcome });
  }

  /** Every autoscaled pool's reading; pools no longer read lose their series. */
  readings(readings: Iterable<AutoscalerReading>): void {
    const seen = new Set<string>();
    for (const r of readings) {
      const labels = { pool_namespace: r.namespace, pool: r.pool };
      if (r.hitRatio === undefined) this.#hitRatio.remove(labels);
      else this.#hitRatio.set(labels, r.hitRatio);
      this.#claimRate.set(labels, r.claimRate);
      this.#leadTime.set(labels, r.leadTimeSeconds);
      this.#desired.set(labels, r.desired);
      this.#recommended.set(labels, r.recommended);
      seen.add(`${r.namespace}/${r.pool}`);
    }
    for (const ref of this.#series) {
      if (seen.has(ref)) continue;
      const [pool_namespace = '', pool = ''] = ref.split('/');
      for (const gauge of [this.#hitRatio, this.#claimRate, this.#leadTime, this.#desired, this.#recommended])
        gauge.remove({ pool_namespace, pool });
    }
    this.#series = seen;
  }
}
