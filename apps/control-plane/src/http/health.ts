// Liveness, readiness and metrics. Readiness says whether this replica could
// drive (caches synced, a fleet token present); a standby is ready too, so a
// rollout does not wait on who holds the lease. Liveness fails only when a
// restart can help: the leader's reconcile loop is wedged.
import { FLEET_TOKEN_ENV } from '@warmpool/runtime';
import type { KubeObject } from '@warmpool/api';
import type { Informer } from '@warmpool/kube';
import { Hono } from 'hono';
import type { Clock } from '@warmpool/runtime';
import type { WarmPoolReconciler } from '../controllers/warmpool/reconciler.js';
import type { ControlPlaneMetrics } from '../metrics.js';
import type { TokenSource } from '../token.js';

export interface HealthAppOptions {
  /** Serve /metrics too (the metrics address); omitted on the probe-only address. */
  metrics?: ControlPlaneMetrics;
  /** Why this replica is not ready; empty when it is. */
  notReadyReasons(): string[];
  /** Why this replica should be restarted; empty when it is live. */
  notLiveReasons(): string[];
  /** Extra facts for /readyz's body. */
  describe?(): Record<string, unknown>;
  /**
   * Why the claim API cannot serve claims (Redis, caches): /readyz/claims.
   * Not part of /readyz: a replica whose Redis is down still drives, and its
   * claim API still answers (503 with the reason) rather than vanishing.
   */
  claimsNotReadyReasons?(): string[];
}

export interface ReplicaHealthOptions {
  token: TokenSource;
  /** Every cache this replica keeps: not ready until each has synced. */
  informers: ReadonlyArray<Pick<Informer<KubeObject>, 'hasSynced' | 'type'>>;
  driver: Pick<WarmPoolReconciler, 'notReadyReasons' | 'stalledMs'>;
  clock: Clock;
  /** Not live when, while leading, no reconcile finished for this long. */
  stallTimeoutMs: number;
}

export interface ReplicaHealth {
  /** Why this replica is not ready (empty when it is): no token, caches not synced, the driver's own reasons. */
  notReadyReasons(): string[];
  /** Why it should be restarted (empty when live): a wedged reconcile loop while leading. */
  notLiveReasons(): string[];
}

/** What /readyz and /healthz answer, from what the replica runs. */
export function replicaHealth(options: ReplicaHealthOptions): ReplicaHealth {
  const { token, informers, driver, clock, stallTimeoutMs } = options;
  return {
    notReadyReasons: () => {
      const reasons: string[] = [];
      if (token() === undefined)
        reasons.push(`no fleet token configured (--token-file or ${FLEET_TOKEN_ENV}): fail-closed, nothing is pushed`);
      for (const informer of informers)
        if (!informer.hasSynced()) reasons.push(`${informer.type.kind} cache not synced yet`);
      reasons.push(...driver.notReadyReasons());
      return reasons;
    },
    notLiveReasons: () => {
      const stalled = driver.stalledMs(clock.now());
      if (stalled === undefined || stalled <= stallTimeoutMs) return [];
      return [
        `leading, but no reconcile finished for ${Math.round(stalled / 1000)} s (--stall-timeout ${Math.round(stallTimeoutMs / 1000)} s): the loop is wedged`,
      ];
    },
  };
}

export function createHealthApp(options: HealthAppOptions): Hono {
  const app = new Hono();
  app.get('/healthz', (c) => {
    const reasons = options.notLiveReasons();
    if (reasons.length === 0) return c.text('ok');
    return c.json({ live: false, error: 'not live', reason: 'ReconcileStalled', reasons }, 503);
  });
  app.get('/readyz', (c) => {
    const reasons = options.notReadyReasons();
    const facts = options.describe?.() ?? {};
    if (reasons.length === 0) return c.json({ ready: true, ...facts });
    return c.json({ ready: false, error: 'not ready', reason: 'NotReady', reasons, ...facts }, 503);
  });
  const claimsNotReady = options.claimsNotReadyReasons;
  if (claimsNotReady !== undefined) {
    app.get('/readyz/claims', (c) => {
      const reasons = claimsNotReady();
      return reasons.length === 0
        ? c.json({ ready: true })
        : c.json({ ready: false, error: 'claims not ready', reason: 'NotReady', reasons }, 503);
    });
  }
  const metrics = options.metrics;
  if (metrics) {
    app.get('/metrics', async (c) => c.body(await metrics.render(), 200, { 'content-type': metrics.contentType }));
  }
  app.notFound((c) => c.json({ error: 'not found', reason: 'NotFound' }, 404));
  return app;
}
