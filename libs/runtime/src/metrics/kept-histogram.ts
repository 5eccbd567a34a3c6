// A labelled histogram whose series the caller keeps (see kept-metric.ts):
// observing one is a bucket search and three additions. Its page is what a
// prom-client Histogram with the same name, help, labels and buckets prints.
import { KeptMetric, KeptSeries, type KeptMetricOptions, type KeptSample, type LabelSet } from './kept-metric.js';

/** One label set of a KeptHistogram. */
export class HistogramSeries<L extends string> extends KeptSeries<L> {
  readonly #bounds: readonly number[];
  /** Per bucket, not cumulative; the last one is +Inf. */
  readonly #counts: Float64Array;
  #sum = 0;
  #count = 0;

  constructor(labels: LabelSet<L>, bounds: readonly number[], page: KeptSeries<L>[]) {
    super(labels, page);
    this.#bounds = bounds;
    this.#counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    // As prom-client's: a value Prometheus cannot sum is refused, not counted.
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    this.#counts[i] = (this.#counts[i] as number) + 1;
    this.#sum += value;
    if (this.#count++ === 0) this.appear();
  }

  zero(): void {
    this.#counts.fill(0);
    this.#sum = 0;
    this.#count = 0;
  }

  samples(name: string, into: KeptSample[]): void {
    const bucket = `${name}_bucket`;
    const sharedLabels = this.labels;
    let cumulative = 0;
    this.#bounds.forEach((le, i) => {
      cumulative += this.#counts[i] as number;
      into.push({ metricName: bucket, labels: { le }, sharedLabels, value: cumulative });
    });
    into.push(
      { metricName: bucket, labels: { le: '+Inf' }, sharedLabels, value: this.#count },
      { metricName: `${name}_sum`, labels: {}, sharedLabels, value: this.#sum },
      { metricName: `${name}_count`, labels: {}, sharedLabels, value: this.#count },
    );
  }
}

export interface KeptHistogramOptions<L extends string> extends KeptMetricOptions<L> {
  /** Upper bounds, ascending as prom-client wants them; +Inf is added. */
  buckets: readonly number[];
}

export class KeptHistogram<L extends string> extends KeptMetric<L, HistogramSeries<L>> {
  constructor(options: KeptHistogramOptions<L>) {
    const bounds = Object.freeze([...options.buckets]);
    super('histogram', options, (labels, page) => new HistogramSeries(labels, bounds, page));
  }
}
