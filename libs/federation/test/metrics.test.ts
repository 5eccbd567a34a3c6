import { Registry as PromRegistry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FEDERATION_METRIC_NAMES, FederationGauges, publishMetrics } from '../src/index.js';
import { LOCAL, TTL_MS, member, registryWithClock } from './support.js';

type Series = Record<string, Record<string, number>>;

/** Every exported series as { metric: { "cluster/namespace/env/group": value } }. */
async function exported(prom: PromRegistry): Promise<Series> {
  const out: Series = {};
  for (const metric of await prom.getMetricsAsJSON()) {
    const values: Record<string, number> = {};
    for (const { labels, value } of metric.values) {
      values[`${labels['cluster']}/${labels['namespace']}/${labels['env']}/${labels['group']}`] = value;
    }
    out[metric.name] = values;
  }
  return out;
}

describe('publishMetrics', () => {
  let prom: PromRegistry;
  let gauges: FederationGauges;

  beforeEach(() => {
    prom = new PromRegistry();
    gauges = new FederationGauges(prom);
  });
  afterEach(() => gauges.close());

  it('registers the three gauges under the original names, labelled cluster, namespace, env and group', async () => {
    const metrics = await prom.getMetricsAsJSON();
    expect(metrics.map((m) => m.name).sort()).toEqual([
      'agentbox_federation_env_desired',
      'agentbox_federation_env_idle',
      'agentbox_federation_env_running',
    ]);
    expect(metrics.every((m) => String(m.type) === 'gauge')).toBe(true);
    const { registry } = registryWithClock();
    registry.upsert([member({ idle: 1 })]);
    publishMetrics(registry, gauges);
    expect(await prom.metrics()).toContain(
      'agentbox_federation_env_idle{cluster="east",namespace="ns",env="env",group="gpu"} 1',
    );
  });

  it('exports idle, running and desired of every live record, local and foreign', async () => {
    const { registry } = registryWithClock();
    registry.upsert([
      member({ clusterId: LOCAL, scalingGroup: 'cpu', idle: 1, running: 2, desired: 3 }),
      member({ clusterId: 'east', scalingGroup: 'gpu', idle: 4, running: 5, desired: 6 }),
    ]);
    publishMetrics(registry, gauges);
    expect(await exported(prom)).toEqual({
      [FEDERATION_METRIC_NAMES.idle]: { 'east/ns/env/gpu': 4, 'local/ns/env/cpu': 1 },
      [FEDERATION_METRIC_NAMES.running]: { 'east/ns/env/gpu': 5, 'local/ns/env/cpu': 2 },
      [FEDERATION_METRIC_NAMES.desired]: { 'east/ns/env/gpu': 6, 'local/ns/env/cpu': 3 },
    });
  });

  it('sums the member pools of one cluster, Env and group, which share a label set', async () => {
    const { registry } = registryWithClock();
    registry.upsert([
      member({ memberPool: 'a', idle: 1, running: 10, desired: 100 }),
      member({ memberPool: 'b', idle: 2, running: 20, desired: 200 }),
    ]);
    publishMetrics(registry, gauges);
    expect(await exported(prom)).toEqual({
      [FEDERATION_METRIC_NAMES.idle]: { 'east/ns/env/gpu': 3 },
      [FEDERATION_METRIC_NAMES.running]: { 'east/ns/env/gpu': 30 },
      [FEDERATION_METRIC_NAMES.desired]: { 'east/ns/env/gpu': 300 },
    });
  });

  it('stops exporting a record once it has expired, instead of keeping its last value', async () => {
    const { registry, clock } = registryWithClock();
    registry.upsert([member({ clusterId: 'east', idle: 1 })]);
    clock.advance(TTL_MS / 2);
    registry.upsert([member({ clusterId: 'west', idle: 2 })]);
    publishMetrics(registry, gauges);
    expect(Object.keys((await exported(prom))[FEDERATION_METRIC_NAMES.idle] ?? {})).toEqual([
      'east/ns/env/gpu',
      'west/ns/env/gpu',
    ]);

    clock.advance(TTL_MS / 2);
    publishMetrics(registry, gauges);
    expect(await exported(prom)).toEqual({
      [FEDERATION_METRIC_NAMES.idle]: { 'west/ns/env/gpu': 2 },
      [FEDERATION_METRIC_NAMES.running]: { 'west/ns/env/gpu': 0 },
      [FEDERATION_METRIC_NAMES.desired]: { 'west/ns/env/gpu': 0 },
    });
  });

  it('exports nothing once every record has expired', async () => {
    const { registry, clock } = registryWithClock();
    registry.upsert([member({ idle: 1 })]);
    publishMetrics(registry, gauges);
    clock.advance(TTL_MS);
    publishMetrics(registry, gauges);
    expect(await exported(prom)).toEqual({
      [FEDERATION_METRIC_NAMES.idle]: {},
      [FEDERATION_METRIC_NAMES.running]: {},
      [FEDERATION_METRIC_NAMES.desired]: {},
    });
  });

  it('registers nothing on the global default registry', async () => {
    const { register } = await import('prom-client');
    expect(register.getSingleMetric(FEDERATION_METRIC_NAMES.idle)).toBeUndefined();
  });

  it('close() unregisters the gauges so a new set can take the names', () => {
    gauges.close();
    expect(prom.getSingleMetric(FEDERATION_METRIC_NAMES.idle)).toBeUndefined();
    gauges = new FederationGauges(prom);
    expect(prom.getSingleMetric(FEDERATION_METRIC_NAMES.idle)).toBeDefined();
  });

  it('refuses a second set of gauges on the same registry', () => {
    expect(() => new FederationGauges(prom)).toThrow();
  });
});
