// Liveness, readiness and metrics. Readiness says whether this replica could
// drive (caches synced, a fleet token present); a standby is ready too, so a
// rollout does not wait on who holds the lease. Liveness fails only when a
// restart can help: the leader's reconcile loop is wedged. The answers are
// the manager's, which collects them from its runnables.
import { serveApp, type HostPort, type HttpServer } from '@warmpool/runtime';
import { Hono } from 'hono';
import type { Runnable } from '../manager/runnable.js';
import { Gauge, type Registry } from 'prom-client';

export interface HealthAppOptions {
  /** Serve /metrics too (the metrics address); omitted on the probe-only address. */
  metrics?: Registry;
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
    app.get('/metrics', async (c) => c.body(await metrics.metrics(), 200, { 'content-type': metrics.contentType }));
  }
  app.notFound((c) => c.json({ error: 'not found', reason: 'NotFound' }, 404));
  return app;
}

/** `warmpool_build_info`: which build this process runs, for every scrape of `registry`. */
export function registerBuildInfo(registry: Registry, version: string | undefined): void {
  new Gauge({
    name: 'warmpool_build_info',
    help: 'Always 1; the labels say which build runs',
    labelNames: ['component', 'version', 'node_version'],
    registers: [registry],
  }).set({ component: 'control-plane', version: version ?? 'unknown', node_version: process.version }, 1);
}

export interface HealthServersOptions extends HealthAppOptions {
  listen: HostPort | undefined;
  probeListen: HostPort | undefined;
}

/**
 * The health/metrics app (everything in `options`) at `listen`, and the probe-only app (/healthz, /readyz) at
 * `probeListen`, each served only when given.
 */
export class HealthServers implements Runnable {
  readonly name = 'health and metrics servers';
  readonly needsLeader = false;
  readonly app: Hono;
  readonly #served: Array<{ app: Hono; listen: HostPort | undefined; server?: HttpServer }>;

  constructor(options: HealthServersOptions) {
    const { notReadyReasons, notLiveReasons, describe } = options;
    this.app = createHealthApp(options);
    const probeApp = createHealthApp({ notReadyReasons, notLiveReasons, ...(describe ? { describe } : {}) });
    this.#served = [
      { app: this.app, listen: options.listen },
      { app: probeApp, listen: options.probeListen },
    ];
  }

  get url(): string | undefined {
    return this.#served[0]?.server?.url;
  }

  get probeUrl(): string | undefined {
    return this.#served[1]?.server?.url;
  }

  async start(): Promise<void> {
    for (const served of this.#served)
      if (served.listen !== undefined) served.server = await serveApp(served.app, served.listen);
  }

  async close(): Promise<void> {
    for (const served of this.#served) await served.server?.close();
  }
}
