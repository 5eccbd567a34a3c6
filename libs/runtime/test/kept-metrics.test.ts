// A kept metric keeps its own counts; what Prometheus scrapes must be what
// prom-client's own metric prints for the same definition and observations.
// Each case feeds both, each in a registry of its own under the same name, and
// requires the registries' pages to be the same text.
import { Counter, Histogram, Registry, type RegistryContentType } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { KeptCounter, KeptHistogram, type LabelSet } from '../src/index.js';

const NAME = 'warmpool_test_request_duration_seconds';
const HELP = 'Time to answer a request, by route, method and status';
const BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const LABELS = ['route', 'method', 'status'] as const;
type Label = (typeof LABELS)[number];

const COUNTER = 'warmpool_test_claims_total';
const COUNTER_HELP = 'Claims answered, by path, result and reason ("" when served)';
const COUNTER_LABELS = ['path', 'result', 'reason'] as const;
type CounterLabel = (typeof COUNTER_LABELS)[number];

/** Ours and prom-client's, fed alike; `same()` compares the two registries' pages. */
function twins(contentType: RegistryContentType = Registry.PROMETHEUS_CONTENT_TYPE) {
  const ourRegistry = new Registry<RegistryContentType>();
  const theirRegistry = new Registry<RegistryContentType>();
  ourRegistry.setContentType(contentType);
  theirRegistry.setContentType(contentType);
  const ours = {
    histogram: new KeptHistogram({
      name: NAME,
      help: HELP,
      labelNames: LABELS,
      buckets: BUCKETS,
      registry: ourRegistry,
    }),
    counter: new KeptCounter({ name: COUNTER, help: COUNTER_HELP, labelNames: COUNTER_LABELS, registry: ourRegistry }),
  };
  const registers = [theirRegistry];
  const theirs = {
    histogram: new Histogram({ name: NAME, help: HELP, labelNames: LABELS, buckets: BUCKETS, registers }),
    counter: new Counter({ name: COUNTER, help: COUNTER_HELP, labelNames: COUNTER_LABELS, registers }),
  };
  return {
    ours,
    ourRegistry,
    theirRegistry,
    observe(labels: LabelSet<Label>, seconds: number): void {
      ours.histogram.series(labels).observe(seconds);
      theirs.histogram.observe(labels, seconds);
    },
    inc(labels: LabelSet<CounterLabel>): void {
      ours.counter.series(labels).inc();
      theirs.counter.inc(labels);
    },
    async same(): Promise<string> {
      const page = await ourRegistry.metrics();
      expect(page).toBe(await theirRegistry.metrics());
      return page;
    },
  };
}

const OBSERVATIONS: Array<[route: string, method: string, status: string, seconds: number]> = [
  ['claim', 'POST', '200', 0.00004],
  ['claim', 'POST', '200', 0.0001],
  ['claim', 'POST', '200', 0.00011],
  ['claim', 'POST', '429', 0.003],
  ['info', 'GET', '200', 0.25],
  ['claim', 'POST', '200', 12],
  ['not_found', 'PATCH', '404', 0],
];

/** Deterministic pseudo-random numbers in [0, 1) (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('kept metrics print what prom-client prints', () => {
  it('before any observation: the help and type alone, even for series made in advance', async () => {
    const both = twins();
    both.ours.histogram.series({ route: 'claim', method: 'POST', status: '200' });
    both.ours.counter.series({ path: 'http', result: 'served', reason: '' });
    expect(await both.same()).not.toContain('{');
  });

  it('a histogram: buckets, +Inf, sum and count, for values on, between and beyond the bounds', async () => {
    const both = twins();
    for (const [route, method, status, seconds] of OBSERVATIONS) both.observe({ route, method, status }, seconds);
    expect(await both.same()).toContain(`${NAME}_count{route="claim",method="POST",status="200"} 4`);
  });

  it('a counter, by label set', async () => {
    const both = twins();
    both.inc({ path: 'http', result: 'served', reason: '' });
    both.inc({ path: 'crd', result: 'failed', reason: 'NoCapacity' });
    both.inc({ path: 'http', result: 'served', reason: '' });
    expect(await both.same()).toContain(`${COUNTER}{path="http",result="served",reason=""} 2`);
  });

  it('series made in advance appear when first observed, in that order', async () => {
    const both = twins();
    const early = ['a', 'b', 'c', 'd'].map((route) =>
      both.ours.histogram.series({ route, method: 'GET', status: '200' }),
    );
    expect(early).toHaveLength(4);
    both.observe({ route: 'c', method: 'GET', status: '200' }, 0.01);
    both.observe({ route: 'e', method: 'GET', status: '200' }, 0.02);
    both.observe({ route: 'a', method: 'GET', status: '200' }, 0.03);
    both.observe({ route: 'c', method: 'GET', status: '200' }, 0.04);
    const page = await both.same();
    expect(page).not.toContain('route="b"');
  });

  it('hands back the same series for the same labels, in any order, and labels print in labelNames order', async () => {
    const both = twins();
    const series = both.ours.counter.series({ path: 'http', result: 'failed', reason: 'Timeout' });
    expect(both.ours.counter.series({ reason: 'Timeout', result: 'failed', path: 'http' })).toBe(series);
    // Values that would run together unprefixed are still two label sets.
    expect(both.ours.counter.series({ path: 'ab', result: 'c', reason: '' })).not.toBe(
      both.ours.counter.series({ path: 'a', result: 'bc', reason: '' }),
    );
    both.inc({ path: 'http', result: 'failed', reason: 'Timeout' });
    await both.same();
  });

  it('escapes label values as prom-client does', async () => {
    const both = twins();
    both.observe({ route: 'a"b\\c\nd', method: 'GET', status: '200' }, 0.5);
    both.inc({ path: 'x"y', result: '\\', reason: 'line\nbreak' });
    await both.same();
  });

  it('resetMetrics() zeroes every series and takes it off the page; series held stay valid', async () => {
    const both = twins();
    const held = both.ours.histogram.series({ route: 'claim', method: 'POST', status: '200' });
    both.observe({ route: 'claim', method: 'POST', status: '200' }, 0.001);
    both.observe({ route: 'info', method: 'GET', status: '200' }, 0.002);
    both.inc({ path: 'http', result: 'served', reason: '' });
    both.ourRegistry.resetMetrics();
    both.theirRegistry.resetMetrics();
    expect(await both.same()).not.toContain('{');
    both.observe({ route: 'info', method: 'GET', status: '200' }, 0.003);
    both.observe({ route: 'claim', method: 'POST', status: '200' }, 0.004);
    both.inc({ path: 'crd', result: 'served', reason: '' });
    expect(both.ours.histogram.series({ route: 'claim', method: 'POST', status: '200' })).toBe(held);
    expect(await both.same()).toContain(`${NAME}_count{route="claim",method="POST",status="200"} 1`);
  });

  it("with the registry's default labels", async () => {
    const both = twins();
    for (const registry of [both.ourRegistry, both.theirRegistry])
      registry.setDefaultLabels({ pod: 'cp-0', route: 'x' });
    for (const [route, method, status, seconds] of OBSERVATIONS) both.observe({ route, method, status }, seconds);
    both.inc({ path: 'fed', result: 'failed', reason: 'Expired' });
    await both.same();
  });

  it('in an OpenMetrics registry', async () => {
    const both = twins(Registry.OPENMETRICS_CONTENT_TYPE);
    for (const [route, method, status, seconds] of OBSERVATIONS) both.observe({ route, method, status }, seconds);
    both.inc({ path: 'http', result: 'served', reason: '' });
    expect(await both.same()).toContain('warmpool_test_claims_total{path="http",result="served",reason=""} 1');
  });

  it('for many observations over many series, with resets between', async () => {
    const both = twins();
    const next = random(42);
    const pick = <T>(from: readonly T[]): T => from[Math.floor(next() * from.length)] as T;
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 2_000; i++) {
        const labels = {
          route: pick(['claim', 'release', 'info']),
          method: pick(['GET', 'POST']),
          status: pick(['200', '429', '503']),
        };
        // Across every bucket and past the last, some exactly on a bound.
        both.observe(labels, next() < 0.1 ? pick(BUCKETS) : next() ** 4 * 20);
        both.inc({ path: labels.route, result: labels.method, reason: labels.status });
      }
      await both.same();
      both.ourRegistry.resetMetrics();
      both.theirRegistry.resetMetrics();
    }
  });

  it('answers getMetricsAsJSON() as prom-client does', async () => {
    const both = twins();
    for (const [route, method, status, seconds] of OBSERVATIONS) both.observe({ route, method, status }, seconds);
    both.inc({ path: 'http', result: 'served', reason: '' });
    const withoutExemplars = async (registry: Registry<RegistryContentType>) =>
      (await registry.getMetricsAsJSON()).map(({ values, ...metric }) => ({
        ...metric,
        // prom-client's histogram lines carry their (empty) exemplars too.
        values: values.map((value) => {
          const { exemplar: _exemplar, ...rest } = value as typeof value & { exemplar?: unknown };
          return rest;
        }),
      }));
    expect(await withoutExemplars(both.ourRegistry)).toEqual(await withoutExemplars(both.theirRegistry));
  });

  it('refuses a value that is not a finite number, as prom-client does', () => {
    const { ours } = twins();
    const series = ours.histogram.series({ route: 'claim', method: 'POST', status: '200' });
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY]) expect(() => series.observe(value)).toThrow(TypeError);
  });
});
