import { Gauge, type Registry as PromRegistry } from 'prom-client';
import type { Capacity } from './capacity.js';
import type { CapacityRegistry } from './registry.js';

/** Names kept from the original design so existing dashboards keep working. */
export const FEDERATION_METRIC_NAMES = {
  idle: 'agentbox_federation_env_idle',
  running: 'agentbox_federation_env_running',
  desired: 'agentbox_federation_env_desired',
} as const;

const LABELS = ['cluster', 'namespace', 'env', 'group'] as const;
type Label = (typeof LABELS)[number];

/**
 * The three federation gauges, registered on the prom-client registry given
 * (never the global default, so tests and processes own their registries).
 */
export class FederationGauges {
  readonly #promRegistry: PromRegistry;
  readonly #idle: Gauge<Label>;
  readonly #running: Gauge<Label>;
  readonly #desired: Gauge<Label>;

  constructor(promRegistry: PromRegistry) {
    this.#promRegistry = promRegistry;
    const gauge = (name: string, help: string): Gauge<Label> =>
      new Gauge({ name, help, labelNames: LABELS, registers: [promRegistry] });
    this.#idle = gauge(
      FEDERATION_METRIC_NAMES.idle,
      'Idle sandboxes advertised per cluster, Env and scaling group, as seen in this federation registry.',
    );
    this.#running = gauge(
      FEDERATION_METRIC_NAMES.running,
      'Running sandboxes advertised per cluster, Env and scaling group, as seen in this federation registry.',
    );
    this.#desired = gauge(
      FEDERATION_METRIC_NAMES.desired,
      'Desired replicas advertised per cluster, Env and scaling group, as seen in this federation registry.',
    );
  }

  /**
   * Rewrites every series from a full snapshot. Resetting first is what makes
   * a record that aged out stop being exported instead of lingering at its
   * last value; being synchronous, no scrape sees the reset without the refill.
   * Member pools of one group share a label set, so their values are summed.
   */
  publish(snapshot: Iterable<Capacity>): void {
    const totals = new Map<string, { labels: Record<Label, string>; idle: number; running: number; desired: number }>();
    for (const record of snapshot) {
      const labels = {
        cluster: record.clusterId,
        namespace: record.namespace,
        env: record.envName,
        group: record.scalingGroup,
      };
      const key = JSON.stringify([labels.cluster, labels.namespace, labels.env, labels.group]);
      const total = totals.get(key) ?? { labels, idle: 0, running: 0, desired: 0 };
      total.idle += record.idle;
      total.running += record.running;
      total.desired += record.desired;
      totals.set(key, total);
    }
    this.#idle.reset();
    this.#running.reset();
    this.#desired.reset();
    for (const { labels, idle, running, desired } of totals.values()) {
      this.#idle.set(labels, idle);
      this.#running.set(labels, running);
      this.#desired.set(labels, desired);
    }
  }

  /** Unregisters the gauges, so the same names can be registered again. */
  close(): void {
    for (const name of Object.values(FEDERATION_METRIC_NAMES)) this.#promRegistry.removeSingleMetric(name);
  }
}

/** Publishes the registry's current live records (expired ones vanish from the export). */
export function publishMetrics(registry: CapacityRegistry, gauges: FederationGauges): void {
  gauges.publish(registry.snapshot());
}
