// What a kept metric shares, whatever its type. prom-client's metrics validate
// and hash the label set on every observation, which on a hot path (a claim, an
// API request) costs more than the rest of its bookkeeping together. A kept
// metric's series is found once, by its labels, and kept by the caller, who
// then observes it without labels; prom-client only sees the series when it
// renders, through the get() every metric in a registry answers. The text is
// what prom-client's own metric with the same name, help and labels prints
// for the same observations:
// - a series is printed from its first observation on (one made early, for a
//   label set known in advance, stays off the page until then), and series are
//   printed in the order they were first observed;
// - labels print in labelNames order, after `le` and before the registry's
//   default labels, as prom-client prints a label set given in that order;
// - reset() (registry.resetMetrics()) zeroes every series and takes it off
//   the page until it is observed again, as prom-client drops its series; a
//   series a caller holds stays valid.
import type { Histogram, Registry, RegistryContentType } from 'prom-client';

/** A label set: one value per label name. */
export type LabelSet<L extends string> = Readonly<Record<L, string>>;

/** One line of the page, as prom-client's own metrics hand them to the registry. */
export interface KeptSample {
  /** The metric's name when absent (a counter's: the registry adds `_total` to it for OpenMetrics). */
  metricName?: string;
  labels: Readonly<Record<string, string | number>>;
  /** The series' labels, printed after `labels` (a histogram's `le`), as prom-client's histograms do. */
  sharedLabels?: Readonly<Record<string, string>>;
  value: number;
}

/** What get() answers: the metric and its lines. */
export interface KeptMetricData {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  values: KeptSample[];
}

export interface KeptMetricOptions<L extends string> {
  name: string;
  help: string;
  /** At least one: a metric without labels has no label set to look up, and prom-client's costs little. */
  labelNames: readonly [L, ...L[]];
  /** Prometheus's text format or OpenMetrics. */
  registry: Registry<RegistryContentType>;
}

/** One label set's values. */
export abstract class KeptSeries<L extends string> {
  readonly labels: LabelSet<L>;
  /** The metric's series on the page, in the order they were first observed. */
  readonly #page: KeptSeries<L>[];

  protected constructor(labels: LabelSet<L>, page: KeptSeries<L>[]) {
    this.labels = labels;
    this.#page = page;
  }

  /** Puts the series on the page: called by the first observation since it was made or reset. */
  protected appear(): void {
    this.#page.push(this);
  }

  /** Back to no observations. */
  abstract zero(): void;

  /** Appends this series' lines, as prom-client's metric of this type prints them. */
  abstract samples(name: string, into: KeptSample[]): void;
}

/** Makes a metric's series for one label set; `page` is where it puts itself when first observed. */
export type SeriesMaker<L extends string, S extends KeptSeries<L>> = (labels: LabelSet<L>, page: KeptSeries<L>[]) => S;

export abstract class KeptMetric<L extends string, S extends KeptSeries<L>> {
  // Not readonly: for an OpenMetrics registry, the registry renames a counter (no `_total`) as it does prom-client's.
  name: string;
  readonly help: string;
  readonly type: KeptMetricData['type'];
  readonly aggregator = 'sum';
  readonly #labelNames: readonly L[];
  readonly #make: SeriesMaker<L, S>;
  readonly #series = new Map<string, S>();
  readonly #page: KeptSeries<L>[] = [];

  protected constructor(type: KeptMetricData['type'], options: KeptMetricOptions<L>, make: SeriesMaker<L, S>) {
    this.name = options.name;
    this.help = options.help;
    this.type = type;
    this.#labelNames = options.labelNames;
    this.#make = make;
    // The registry renders anything with a name, a help, a type and get(); its types only know prom-client's own
    // classes.
    options.registry.registerMetric(this as unknown as Histogram);
  }

  /** The series for these labels, made on first use; callers keep it (the lookup builds a key). */
  series(labels: LabelSet<L>): S {
    let key = '';
    // Length-prefixed, so no two label sets share a key whatever their values hold.
    for (const name of this.#labelNames) key += `${labels[name].length}:${labels[name]}`;
    let series = this.#series.get(key);
    if (series === undefined) {
      // In labelNames order whatever the caller's order, and frozen: the registry caches a histogram's by identity.
      const ordered = Object.freeze(Object.fromEntries(this.#labelNames.map((name) => [name, labels[name]])));
      series = this.#make(ordered as LabelSet<L>, this.#page);
      this.#series.set(key, series);
    }
    return series;
  }

  /** registry.resetMetrics(): every series back to no observations, and off the page until observed again. */
  reset(): void {
    for (const series of this.#page) series.zero();
    this.#page.length = 0;
  }

  // Async like prom-client's own: the registry awaits them. It prints what getForPromString() answers when a metric
  // has one, and getMetricsAsJSON() takes get(), with the series' labels among each line's own.
  async getForPromString(): Promise<KeptMetricData> {
    const values: KeptSample[] = [];
    for (const series of this.#page) series.samples(this.name, values);
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  async get(): Promise<KeptMetricData> {
    const data = await this.getForPromString();
    data.values = data.values.map(({ sharedLabels, labels, ...sample }) => ({
      ...sample,
      labels: { ...labels, ...sharedLabels },
    }));
    return data;
  }
}
