// The claim trace of the demand-autoscaler benchmark, generated from a seed
// (mulberry32, lib/prng.ts) so every run replays the same claims: one day
// compressed into `daySeconds`, a diurnal curve (a night trough, a day peak),
// Poisson arrivals around it (inhomogeneous, by thinning), and flash crowds of
// `flashFactor` × the current rate for `flashSeconds`. Each claim holds its
// sandbox for an exponential session.
import { prng } from './prng.ts';

export interface TraceSpec {
  seed: number;
  daySeconds: number;
  troughPerSecond: number;
  peakPerSecond: number;
  /** Onsets, as fractions of the day. */
  flashAt: readonly number[];
  flashFactor: number;
  flashSeconds: number;
  meanSessionSeconds: number;
}

export interface Trace {
  spec: TraceSpec;
  /** Arrival times (seconds from the start), ascending. */
  arrivals: Float64Array;
  /** Session length of each claim, seconds. */
  sessions: Float64Array;
  /** Flash crowd onsets, seconds. */
  flashes: number[];
}

/** The rate without noise at time t (seconds): sin² from trough at midnight to peak at noon, plus the crowds. */
export function rateAt(spec: TraceSpec, t: number): number {
  const phase = Math.sin((Math.PI * t) / spec.daySeconds);
  const diurnal = spec.troughPerSecond + (spec.peakPerSecond - spec.troughPerSecond) * phase * phase;
  const crowd = spec.flashAt.some((f) => t >= f * spec.daySeconds && t < f * spec.daySeconds + spec.flashSeconds);
  return crowd ? diurnal * spec.flashFactor : diurnal;
}

export function generateTrace(spec: TraceSpec): Trace {
  const random = prng(spec.seed);
  const max = spec.peakPerSecond * spec.flashFactor;
  const arrivals: number[] = [];
  const sessions: number[] = [];
  let t = 0;
  for (;;) {
    t += -Math.log(1 - random()) / max;
    if (t >= spec.daySeconds) break;
    if (random() * max >= rateAt(spec, t)) continue;
    arrivals.push(t);
    sessions.push(-Math.log(1 - random()) * spec.meanSessionSeconds);
  }
  return {
    spec,
    arrivals: Float64Array.from(arrivals),
    sessions: Float64Array.from(sessions),
    flashes: spec.flashAt.map((f) => f * spec.daySeconds),
  };
}
