// Liveness, readiness and metrics. Readiness says whether this replica could
// drive (caches synced, a fleet token present); a standby is ready too, so a
// rollout does not wait on who holds the lease.
import { Hono } from 'hono';
import type { ControlPlaneMetrics } from '../metrics.js';

export interface HealthAppOptions {
  metrics: ControlPlaneMetrics;
  /** Why this replica is not ready; empty when it is. */
  notReadyReasons(): string[];
  /** Extra facts for /readyz's body. */
  describe?(): Record<string, unknown>;
  /**
   * Why the claim API cannot serve claims (Redis, caches): /readyz/claims.
   * Not part of /readyz: a replica whose Redis is down still drives, and its
   * claim API still answers (503 with the reason) rather than vanishing.
   */
  claimsNotReadyReasons?(): string[];
}

export function createHealthApp(options: HealthAppOptions): Hono {
  const app = new Hono();
  app.get('/healthz', (c) => c.text('ok'));
  app.get('/readyz', (c) => {
    const reasons = options.notReadyReasons();
    const facts = options.describe?.() ?? {};
    if (reasons.length === 0) return c.json({ ready: true, ...facts });
    return c.json({ ready: false, error: 'not ready', reasons, ...facts }, 503);
  });
  const claimsNotReady = options.claimsNotReadyReasons;
  if (claimsNotReady !== undefined) {
    app.get('/readyz/claims', (c) => {
      const reasons = claimsNotReady();
      return reasons.length === 0 ? c.json({ ready: true }) : c.json({ ready: false, error: 'claims not ready', reasons }, 503);
    });
  }
  app.get('/metrics', async (c) => {
    return c.body(await options.metrics.render(), 200, { 'content-type': options.metrics.contentType });
  });
  app.notFound((c) => c.json({ error: 'not found' }, 404));
  return app;
}
