// Reading Prometheus' text exposition format: enough for counters, gauges and
// histograms scraped from the apiserver and the control plane.

export interface Sample {
  name: string;
  labels: Map<string, string>;
  value: number;
}

function labelsOf(text: string): Map<string, string> {
  const labels = new Map<string, string>();
  for (const match of text.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels.set(match[1] ?? '', match[2] ?? '');
  return labels;
}

/** Every sample whose metric name starts with `prefix`. */
export function parseSamples(text: string, prefix: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(prefix)) continue;
    const open = line.indexOf('{');
    const space = line.lastIndexOf(' ');
    if (open >= 0 && open < space) {
      const close = line.lastIndexOf('}');
      samples.push({
        name: line.slice(0, open),
        labels: labelsOf(line.slice(open + 1, close)),
        value: Number(line.slice(close + 1).trim()),
      });
    } else {
      samples.push({ name: line.slice(0, space), labels: new Map(), value: Number(line.slice(space + 1)) });
    }
  }
  return samples;
}

/** Σ of the samples of one metric whose labels match `where`. */
export function sum(samples: readonly Sample[], name: string, where: Record<string, string> = {}): number {
  let total = 0;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (Object.entries(where).every(([k, v]) => s.labels.get(k) === v)) total += s.value;
  }
  return total;
}

export interface HistogramSnapshot {
  count: number;
  sum: number;
  /** Upper bound (seconds) → cumulative count. */
  buckets: Array<[le: number, count: number]>;
}

export function histogram(samples: readonly Sample[], name: string): HistogramSnapshot {
  const buckets = samples
    .filter((s) => s.name === `${name}_bucket`)
    .map((s): [number, number] => [
      s.labels.get('le') === '+Inf' ? Number.POSITIVE_INFINITY : Number(s.labels.get('le')),
      s.value,
    ])
    .sort((a, b) => a[0] - b[0]);
  return { count: sum(samples, `${name}_count`), sum: sum(samples, `${name}_sum`), buckets };
}

/** later − earlier, bucket by bucket: the observations made in between. */
export function histogramDelta(earlier: HistogramSnapshot, later: HistogramSnapshot): HistogramSnapshot {
  const before = new Map(earlier.buckets);
  return {
    count: later.count - earlier.count,
    sum: later.sum - earlier.sum,
    buckets: later.buckets.map(([le, count]) => [le, count - (before.get(le) ?? 0)]),
  };
}

/** The bucket bound under which a fraction q of the observations fall (an upper estimate). */
export function histogramQuantile(h: HistogramSnapshot, q: number): number {
  const want = q * h.count;
  for (const [le, count] of h.buckets) if (count >= want) return le;
  return Number.NaN;
}
