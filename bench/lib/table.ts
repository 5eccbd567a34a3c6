// How every warmpool benchmark reports: a markdown table of
// metric | measured | goal | anchor | verdict, plus small number helpers.

export type Row = [metric: string, measured: string, goal: string, anchor: string, verdict: string];

export function printTable(title: string, notes: string[], rows: Row[]): void {
  console.log(title);
  for (const note of notes) console.log(note);
  console.log('');
  const header: Row = ['metric', 'measured', 'goal', 'anchor', 'verdict'];
  console.log(`| ${header.join(' | ')} |`);
  console.log(`|${header.map(() => '---').join('|')}|`);
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
}

/** The q-quantile (0..1) of the samples by nearest rank; NaN when there are none. */
export function quantile(samples: readonly number[], q: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

/** The median of the samples (the mean of the middle two for an even count); NaN when there are none. */
export function median(samples: readonly number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = sorted.length / 2;
  return Number.isInteger(mid)
    ? ((sorted[mid - 1] ?? Number.NaN) + (sorted[mid] ?? Number.NaN)) / 2
    : (sorted[Math.floor(mid)] ?? Number.NaN);
}

/** The mean of `samples` with its standard error (NaN for no samples; 0 error for one). */
export function meanWithError(samples: readonly number[]): { mean: number; error: number } {
  const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
  const variance = samples.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, samples.length - 1);
  return { mean, error: Math.sqrt(variance / samples.length) };
}

/** `value` with its sign, to one decimal: +3.2, -1.0. */
export const signed = (value: number): string => `${value >= 0 ? '+' : ''}${value.toFixed(1)}`;

export const ms = (value: number, digits = 1): string =>
  Number.isFinite(value) ? `${value.toFixed(digits)} ms` : 'n/a';
export const seconds = (valueMs: number, digits = 2): string =>
  Number.isFinite(valueMs) ? `${(valueMs / 1000).toFixed(digits)} s` : 'n/a';
export const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
export const pass = (ok: boolean): string => (ok ? 'PASS' : 'FAIL');

/** One line describing the machine, for the report. */
export function machineNote(): string {
  return `Node ${process.version}, 2 cores shared with other work`;
}
