// Claims sent through one path for a while, tallied: latencies, outcomes,
// and what the watched processes spent meanwhile (from /proc).
import { performance } from 'node:perf_hooks';
import type { Pool } from 'undici';
import { cpuMsOf, scheduleOf, type Schedule } from './proc.ts';

export interface Tally {
  latenciesMs: number[];
  claims: number;
  errors: number;
  seconds: number;
  /** CPU µs used meanwhile by each watched process. */
  cpu: Map<number, number>;
  /** Each call's CPU µs per claim of the first watched process (the hop), in call order. */
  hopCpuPerClaim: number[];
  /** The hop's user and system CPU and its main thread's switches, summed over the calls. */
  hopSchedule: Schedule;
}

export const emptyTally = (): Tally => ({
  latenciesMs: [],
  claims: 0,
  errors: 0,
  seconds: 0,
  cpu: new Map(),
  hopCpuPerClaim: [],
  hopSchedule: { userMicros: 0, systemMicros: 0, voluntarySwitches: 0, involuntarySwitches: 0 },
});

/** The claim every call sends, and its headers. */
export interface Claim {
  headers: Readonly<Record<string, string>>;
  body: string;
}

/**
 * `concurrency` callers sending `claim` to `pool` for `durationMs`, tallied into `into`; the CPU and scheduling of the
 * `watch`ed processes (the hop first) over the same time with it.
 */
export async function claimFor(
  pool: Pool,
  claim: Claim,
  durationMs: number,
  concurrency: number,
  into: Tally,
  watch: number[] = [],
): Promise<void> {
  const cpuBefore = watch.map((pid) => cpuMsOf(pid) * 1_000);
  const scheduleBefore = watch[0] === undefined ? undefined : scheduleOf(watch[0]);
  const claimsBefore = into.claims;
  const start = performance.now();
  const end = start + durationMs;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const t0 = performance.now();
      const res = await pool.request({ method: 'POST', path: '/v1/claim', headers: claim.headers, body: claim.body });
      await res.body.text();
      into.latenciesMs.push(performance.now() - t0);
      if (res.statusCode === 200) into.claims++;
      else into.errors++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  into.seconds += (performance.now() - start) / 1000;
  const used = watch.map((pid, i) => cpuMsOf(pid) * 1_000 - (cpuBefore[i] as number));
  watch.forEach((pid, i) => into.cpu.set(pid, (into.cpu.get(pid) ?? 0) + (used[i] as number)));
  if (used[0] !== undefined) into.hopCpuPerClaim.push(used[0] / (into.claims - claimsBefore));
  if (scheduleBefore !== undefined && watch[0] !== undefined) {
    const after = scheduleOf(watch[0]);
    for (const key of Object.keys(after) as Array<keyof Schedule>)
      into.hopSchedule[key] += after[key] - scheduleBefore[key];
  }
}

/**
 * Each round's mean hop CPU per claim over `tallies`. Invariant: each tally had exactly one watched call per round,
 * so its i-th `hopCpuPerClaim` is round i.
 */
export function meanHopCpuPerRound(tallies: readonly Tally[], rounds: number): number[] {
  return Array.from(
    { length: rounds },
    (_, i) => tallies.reduce((sum, t) => sum + (t.hopCpuPerClaim[i] ?? Number.NaN), 0) / tallies.length,
  );
}

export function quantile(values: number[], q: number): number {
  const sorted = Float64Array.from(values).sort();
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}
