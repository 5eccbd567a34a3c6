// What the control plane's own /metrics page says of its claim path and its
// process: the batches' sizes, the worker's time per stage and the GC pauses.
// Each is a total since the process started, so two readings around a turn
// give the turn's share (the add* helpers add that difference to a tally).
// The bare design serves the same GC tally at GET /gc, from the same kind of
// observer, so the two processes' pauses compare alike.
import { parseSamples } from './prom-text.ts';

/** The worker stages of claim_stage_seconds, in the order a claim meets them. */
export const STAGES = ['queue', 'reserve', 'node', 'record'] as const;

/** A histogram's observations and their sum. */
export interface Tally {
  count: number;
  sum: number;
}

export function batchStats(text: string): Tally {
  const count = parseSamples(text, 'warmpool_controlplane_claim_batch_size_count').reduce((n, s) => n + s.value, 0);
  const sum = parseSamples(text, 'warmpool_controlplane_claim_batch_size_sum').reduce((n, s) => n + s.value, 0);
  return { count, sum };
}

/** claim_stage_seconds per stage: observations and their sum (seconds); every stage of STAGES, in its order. */
export function stageStats(text: string): Map<string, Tally> {
  const tallies = new Map<string, Tally>(STAGES.map((stage) => [stage, { count: 0, sum: 0 }]));
  for (const [suffix, field] of [
    ['_count', 'count'],
    ['_sum', 'sum'],
  ] as const)
    for (const sample of parseSamples(text, `warmpool_controlplane_claim_stage_seconds${suffix}`)) {
      const tally = tallies.get(sample.labels.get('stage') ?? '');
      if (tally !== undefined) tally[field] += sample.value;
    }
  return tallies;
}

/** Adds after − before to each stage already in `into`. */
export function addTallies(into: Map<string, Tally>, before: Map<string, Tally>, after: Map<string, Tally>): void {
  for (const [stage, tally] of into) {
    tally.count += (after.get(stage)?.count ?? 0) - (before.get(stage)?.count ?? 0);
    tally.sum += (after.get(stage)?.sum ?? 0) - (before.get(stage)?.sum ?? 0);
  }
}

/** GC pauses of a process: how many, their total, and how many were over 10 ms (each one stalls every claim in flight). */
export interface GcTally {
  count: number;
  ms: number;
  over10ms: number;
}

/** The control plane's pauses so far, from prom-client's nodejs_gc_duration_seconds (every kind). */
export function controlPlaneGc(text: string): GcTally {
  const total = (suffix: string, le?: string): number =>
    parseSamples(text, `nodejs_gc_duration_seconds${suffix}`)
      .filter((sample) => le === undefined || sample.labels.get('le') === le)
      .reduce((n, sample) => n + sample.value, 0);
  const count = total('_count');
  return { count, ms: total('_sum') * 1000, over10ms: count - total('_bucket', '0.01') };
}

/** The bare design's pauses so far (bench/lib/bare-claim-path.ts serves them at GET /gc). */
export async function bareGc(base: string): Promise<GcTally> {
  return (await (await fetch(`${base}/gc`)).json()) as GcTally;
}

/** The batches the bare design sent so far (GET /batches). */
export async function bareBatches(base: string): Promise<number> {
  return ((await (await fetch(`${base}/batches`)).json()) as { count: number }).count;
}

export function addGc(into: GcTally, before: GcTally, after: GcTally): void {
  into.count += after.count - before.count;
  into.ms += after.ms - before.ms;
  into.over10ms += after.over10ms - before.over10ms;
}

export function gcText(gc: GcTally, claims: number): string {
  return `${gc.count} pauses, ${gc.ms.toFixed(0)} ms (${((gc.ms * 1000) / Math.max(1, claims)).toFixed(0)} µs per claim), ${gc.over10ms} over 10 ms`;
}
