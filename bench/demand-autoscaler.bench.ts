// Demand-sized warm pools on a day of claims: the SandboxWarmPoolAutoscaler's
// core (libs/demand) against the smallest static replicas reaching the same hit
// ratio (found by bisection) and a reactive policy that keeps warm only what
// was claimed over the last claim window, all on one seeded trace in one run.
//
// A discrete-event simulation in virtual time (lib/fleet-sim.ts): fake-sandboxd's
// own core on 20 nodes, its paced refill and boot timers on a virtual clock; the
// control plane's part (spread, placement, the apply delay) is modelled. A day
// is compressed into 4 h of trace time; the run takes a minute or two.
//   make build && node bench/demand-autoscaler.bench.ts
// Writes docs/demand-autoscaler.svg.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '@warmpool/harness';
import { generateTrace, rateAt, type TraceSpec } from './lib/demand-trace.ts';
import { simulate, type FleetModel, type SimResult } from './lib/fleet-sim.ts';
import { DemandPolicy, KnowsAtFirstTickPolicy, ReactivePolicy, StaticPolicy } from './lib/sizing-policies.ts';
import { lineChart, type Series } from './lib/svg.ts';
import { machineNote, pass, printTable, type Row } from './lib/table.ts';

const DAY_SECONDS = Number(process.env.DEMAND_DAY_SECONDS ?? 4 * 3600);
const TRACE: TraceSpec = {
  seed: 20_261_201,
  daySeconds: DAY_SECONDS,
  troughPerSecond: 2,
  peakPerSecond: 20,
  flashAt: [0.3, 0.65],
  flashFactor: 10,
  flashSeconds: 60,
  meanSessionSeconds: 120,
};
const FLEET: FleetModel = {
  nodes: 20,
  refillRate: 20,
  refillConcurrency: 32,
  // A micro-VM with a real image: 2 s to boot, for refills and cold claims alike.
  bootMs: 2_000,
  coldBootMs: 2_000,
  room: 1_200,
  maxClaims: 1_000,
  applyDelaySeconds: 0.5,
  // The claim pipeline's warm answer (docs/benchmarks.md: claim p50 at 32 in flight ≈ 1.7 ms).
  pipelineMs: 2,
  tickSeconds: 1,
  warmupSeconds: 60,
};
const AUTOSCALER = {
  minReplicas: 1,
  maxReplicas: 5_000,
  targetHitRatio: 0.99,
  windowSeconds: 15,
  scaleDownStabilizationSeconds: 60,
  leadTime: { initialSeconds: 4, minSeconds: FLEET.tickSeconds, smoothingSeconds: 60 },
};
const SVG_PATH = join(REPO_ROOT, 'docs/demand-autoscaler.svg');

const started = performance.now();
const trace = generateTrace(TRACE);
console.log(`trace: ${trace.arrivals.length} claims over ${DAY_SECONDS} s (seed ${TRACE.seed})`);

const autoscaler = await simulate(trace, FLEET, new DemandPolicy(AUTOSCALER));
console.log(`autoscaler: hit ratio ${autoscaler.hitRatio.toFixed(4)}`);
const reactive = await simulate(trace, FLEET, new ReactivePolicy(FLEET.tickSeconds));
console.log(`reactive: hit ratio ${reactive.hitRatio.toFixed(4)}`);

/** The smallest static replicas whose hit ratio reaches `target` (hit ratio grows with replicas). */
async function smallestStatic(target: number): Promise<SimResult> {
  let lo = 0;
  let hi = 64;
  let best: SimResult | undefined;
  for (;;) {
    const run = await simulate(trace, FLEET, new StaticPolicy(hi));
    console.log(`  static ${hi}: hit ratio ${run.hitRatio.toFixed(4)}`);
    if (run.hitRatio >= target) {
      best = run;
      break;
    }
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    const run = await simulate(trace, FLEET, new StaticPolicy(mid));
    console.log(`  static ${mid}: hit ratio ${run.hitRatio.toFixed(4)}`);
    if (run.hitRatio >= target) {
      hi = mid;
      best = run;
    } else lo = mid;
  }
  return best;
}
const staticBest = await smallestStatic(autoscaler.hitRatio);
const staticReplicas = Number(staticBest.policy.replace('static ', ''));

// The bound per crowd: the cold claims of a run that follows the autoscaler until the first tick after
// the crowd's onset, then holds every replica the fleet can (KnowsAtFirstTickPolicy).
const crowdSpan = TRACE.flashSeconds + FLEET.bootMs / 1000;
const unavoidable: number[] = [];
for (const [i, onset] of trace.flashes.entries()) {
  const from = FLEET.warmupSeconds + onset;
  const ceiling = FLEET.nodes * (FLEET.room - 200);
  const run = await simulate(
    trace,
    FLEET,
    new KnowsAtFirstTickPolicy(new DemandPolicy(AUTOSCALER), { from, until: from + crowdSpan }, ceiling),
  );
  unavoidable.push(run.flashes[i]?.cold ?? 0);
}
console.log(`unavoidable cold claims per crowd: ${unavoidable.join(' / ')}`);

const p99 = (result: SimResult): number => result.latenciesMs[Math.ceil(0.99 * result.latenciesMs.length) - 1] ?? NaN;
const describe = (result: SimResult): string =>
  `hit ${result.hitRatio.toFixed(4)}, idle ${Math.round(result.idleSandboxSeconds).toLocaleString('en')} sandbox-s, ` +
  `cold ${result.cold}, p99 ${p99(result).toFixed(0)} ms, crowds cold ${result.flashes.map((f) => f.cold).join(' / ')}`;

const idleShare = autoscaler.idleSandboxSeconds / staticBest.idleSandboxSeconds;
const bound = unavoidable;
const beyond = autoscaler.flashes.map((f, i) => f.cold - (bound[i] ?? 0));
const rows: Row[] = [
  ['(a) autoscaler', describe(autoscaler), 'hit ≥ 0.99', '', pass(autoscaler.hitRatio >= 0.99)],
  [`(b) smallest static at the same hit ratio: ${staticReplicas}`, describe(staticBest), '', 'bisection', ''],
  ['(c) reactive: replicas = the claims of the last tick', describe(reactive), '', '', ''],
  [
    'idle sandbox-seconds, (a) / (b)',
    `${(idleShare * 100).toFixed(1)} %`,
    '≤ 60 %',
    'best static',
    pass(idleShare <= 0.6),
  ],
  [
    'cold claims per crowd, (a), beyond the unavoidable',
    autoscaler.flashes.map((f, i) => `${f.cold} − ${bound[i]} = ${beyond[i]}`).join('; '),
    '≤ 1 each',
    'unavoidable: the same run holding every replica from the first tick after onset',
    pass(beyond.every((b) => b <= 1)),
  ],
  ['replicas changes, (a)', String(autoscaler.changes), '', '', ''],
];
printTable(
  `Demand autoscaler, ${trace.arrivals.length} claims (${DAY_SECONDS / 3600} h compressed day, seed ${TRACE.seed})`,
  [
    machineNote(),
    `Fleet: ${FLEET.nodes} nodes, refill ${FLEET.refillRate}/s and ${FLEET.refillConcurrency} in flight per node, boot ${FLEET.bootMs} ms (cold claims too), apply delay ${FLEET.applyDelaySeconds} s, tick ${FLEET.tickSeconds} s.`,
    `Trace: ${TRACE.troughPerSecond}–${TRACE.peakPerSecond} claims/s (sin²), crowds ×${TRACE.flashFactor} for ${TRACE.flashSeconds} s at ${TRACE.flashAt.join(', ')} of the day.`,
    `Autoscaler: target ${AUTOSCALER.targetHitRatio}, claim window ${AUTOSCALER.windowSeconds} s, stabilization ${AUTOSCALER.scaleDownStabilizationSeconds} s.`,
    `Simulated in ${((performance.now() - started) / 1000).toFixed(1)} s of wall time.`,
  ],
  rows,
);

const hours = (points: ReadonlyArray<readonly [number, number]>): Array<[number, number]> =>
  points.map(([t, y]) => [(t / DAY_SECONDS) * 24, y]);
const demand: Array<[number, number]> = [];
for (let t = 0; t <= DAY_SECONDS; t += 30) demand.push([t, rateAt(TRACE, t)]);
const series: Series[] = [
  { label: '(a) autoscaler: replicas', color: '#1f77b4', points: hours(autoscaler.replicas), step: true, width: 2 },
  { label: `(b) static: ${staticReplicas} replicas`, color: '#d62728', points: hours(staticBest.replicas), width: 2 },
  { label: '(c) reactive: replicas', color: '#2ca02c', points: hours(reactive.replicas), step: true, width: 1 },
  { label: 'claim rate without noise (claims/s)', color: '#777777', points: hours(demand), dashed: true, width: 1.5 },
];
writeFileSync(
  SVG_PATH,
  lineChart({
    title: `Warm replicas over a compressed day (${trace.arrivals.length} claims)`,
    subtitle: `hit ratio ${autoscaler.hitRatio.toFixed(4)} (a) / ${staticBest.hitRatio.toFixed(4)} (b) / ${reactive.hitRatio.toFixed(4)} (c); idle sandbox-s (a) = ${(idleShare * 100).toFixed(0)} % of (b)`,
    xLabel: 'hour of the day (the day runs in 4 h of trace time)',
    yLabel: 'replicas / claims per second',
    series,
  }),
);
console.log(`\nwrote ${SVG_PATH}`);
