// The request-latency histogram, observed on every request. prom-client's
// Histogram validates and hashes the label set on every observation, which
// costs the claim path more than the rest of its bookkeeping together. Here a
// (route, method, status) series is a few counters, found once and kept by
// the caller; prom-client only sees them when it renders, through the get()
// every metric in a registry answers. The text is what a prom-client
// Histogram with the same name, labels and buckets would print.
import type { Histogram, Registry } from 'prom-client';

type Labels = Record<'route' | 'method' | 'status', string>;

/** One (route, method, status) series. */
export class DurationSeries {
  readonly labels: Labels;
  readonly #bounds: readonly number[];
  /** Per bucket, not cumulative; the last one is +Inf. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(labels: Labels, bounds: readonly number[]) {
    this.labels = labels;
    this.#bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(seconds: number): void {
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && seconds > (bounds[i] as number)) i++;
    this.counts[i] = (this.counts[i] as number) + 1;
    this.sum += seconds;
    this.count++;
  }
}

interface Sample {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

export class RequestDurations {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #bounds: readonly number[];
  readonly #series = new Map<string, DurationSeries>();

  constructor(options: { name: string; help: string; buckets: readonly number[]; registry: Registry }) {
    this.name = options.name;
    this.help = options.help;
    this.#bounds = [...options.buckets].sort((a, b) => a - b);
    // The registry renders anything with a name, a help, a type and get(); its types only know prom-client's own
    // classes.
    options.registry.registerMetric(this as unknown as Histogram);
  }

  /** The series for these labels, created on first use; callers keep it. */
  series(route: string, method: string, status: number): DurationSeries {
    const key = `${route} ${method} ${status}`;
    let series = this.#series.get(key);
    if (series === undefined) {
      series = new DurationSeries({ route, method, status: String(status) }, this.#bounds);
      this.#series.set(key, series);
    }
    return series;
  }

  /** Zeroes every series (registry.resetMetrics()); series held by callers stay valid. */
  reset(): void {
    for (const series of this.#series.values()) {
      series.counts.fill(0);
      series.sum = 0;
      series.count = 0;
    }
  }

  // Async like prom-client's own get(): the registry awaits it.
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Sample[] }> {
    const values: Sample[] = [];
    const bucket = `${this.name}_bucket`;
    for (const series of this.#series.values()) {
      let cumulative = 0;
      this.#bounds.forEach((le, i) => {
        cumulative += series.counts[i] as number;
        values.push({ metricName: bucket, labels: { le, ...series.labels }, value: cumulative });
      });
      values.push(
        { metricName: bucket, labels: { le: '+Inf', ...series.labels }, value: series.count },
        { metricName: `${this.name}_sum`, labels: { ...series.labels }, value: series.sum },
        { metricName: `${this.name}_count`, labels: { ...series.labels }, value: series.count },
      );
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
