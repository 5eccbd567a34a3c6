// A labelled counter whose series the caller keeps (see kept-metric.ts):
// counting one is an addition. Its page is what a prom-client Counter with the
// same name, help and labels prints.
import { KeptMetric, KeptSeries, type KeptMetricOptions, type KeptSample, type LabelSet } from './kept-metric.js';

/** One label set of a KeptCounter. */
export class CounterSeries<L extends string> extends KeptSeries<L> {
  #value = 0;

  constructor(labels: LabelSet<L>, page: KeptSeries<L>[]) {
    super(labels, page);
  }

  /** Counts one; the hot paths count nothing else. */
  inc(): void {
    if (this.#value++ === 0) this.appear();
  }

  zero(): void {
    this.#value = 0;
  }

  samples(_name: string, into: KeptSample[]): void {
    // No metricName: the registry prints the metric's name, with `_total` for OpenMetrics, as for prom-client's.
    into.push({ labels: this.labels, value: this.#value });
  }
}

export class KeptCounter<L extends string> extends KeptMetric<L, CounterSeries<L>> {
  constructor(options: KeptMetricOptions<L>) {
    super('counter', options, (labels, page) => new CounterSeries(labels, page));
  }
}
