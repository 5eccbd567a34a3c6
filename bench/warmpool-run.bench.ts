// The warm-pool run in process at the fleet benchmark's scale: the reconciler
// from apps/control-plane/dist over in-memory caches of 1 000 NodeInventories
// and the fleet benchmark's 200 pools plus its fan-out pool, agents answering
// at once (bench/lib/run-world.ts). Patches of the fan-out pool (1 000 ↔ 2 000:
// every node's set changes) and of a small pool, each timed from the poke
// (the pool informer's event) to the run's start, its round handed out, its
// first setPools call and its end. Side by side in the same process, the
// floor/peer: the same reconciler in a second world answering every such poke
// with the full resync (what every run was before the incremental run).
// The worlds take turns, patch by patch.
//   make build && node bench/warmpool-run.bench.ts
// RUN_PATCHES (default 30) patches of each pool per world; RUN_NODES (1 000), RUN_POOLS (200).
// To profile one world alone: RUN_WORLDS=incremental (or full) node --cpu-prof --cpu-prof-dir=<dir> bench/warmpool-run.bench.ts,
// then node bench/cpu-profile.ts <file>.
import { fanoutPool, fleetPoolSpecs } from './lib/fleet-pools.ts';
import { BenchWorld, type RunTiming } from './lib/run-world.ts';
import { machineNote, ms, printTable, quantile, type Row } from './lib/table.ts';

const NODES = Number(process.env['RUN_NODES'] ?? 1_000);
const POOLS = Number(process.env['RUN_POOLS'] ?? 200);
const PATCHES = Number(process.env['RUN_PATCHES'] ?? 30);
const WARMUP = 5;
const RESYNCS = 10;
/** The fleet benchmark's fake-sandboxd room per node. */
const CAPACITY = 2_000;
/** Issue 21: patch → round handed out ≤ 20 ms p50 at 1 000 nodes × 200 pools. */
const GOAL_MS = 20;

const specs = fleetPoolSpecs(POOLS);
const fanout = fanoutPool(NODES);
// A small pool of the catalogue: its set changes on the few nodes it spans.
const small = specs.find((p) => p.replicas >= 25 && p.replicas <= 40) ?? specs[0];
if (small === undefined) throw new Error('no pools');
const pools = [...specs, { name: fanout.name, image: fanout.image, replicas: fanout.low }];

const log = (line: string): void => console.error(`[run bench] ${line}`);

const incremental = new BenchWorld('incremental', { nodes: NODES, capacity: CAPACITY, pools, resyncEveryPoke: false });
const full = new BenchWorld('full resync', { nodes: NODES, capacity: CAPACITY, pools, resyncEveryPoke: true });
const only = process.env['RUN_WORLDS'];
const worlds = only === 'incremental' ? [incremental] : only === 'full' ? [full] : [incremental, full];

interface Series {
  fanout: RunTiming[];
  small: RunTiming[];
  resync: number[];
}
const measured = new Map<BenchWorld, Series>(worlds.map((w) => [w, { fanout: [], small: [], resync: [] }]));

try {
  for (const world of worlds) {
    const started = performance.now();
    await world.fill();
    log(`${world.name}: ${NODES} nodes × ${pools.length} pools filled in ${ms(performance.now() - started, 0)}`);
  }
  // The periodic run (the full resync with nothing changed), both worlds alike: the interval's cost.
  for (let i = 0; i < RESYNCS + 2; i++)
    for (const world of worlds) {
      const runMs = await world.resync();
      if (i >= 2) measured.get(world)?.resync.push(runMs);
    }
  for (let i = -WARMUP; i < PATCHES; i++) {
    const high = i % 2 === 0;
    for (const world of worlds) {
      const series = measured.get(world);
      const f = await world.patch(fanout.name, high ? fanout.high : fanout.low);
      const s = await world.patch(small.name, high ? small.replicas + 7 : small.replicas);
      if (i >= 0 && series !== undefined) {
        series.fanout.push(f);
        series.small.push(s);
      }
    }
  }
} finally {
  await Promise.all([incremental, full].map((world) => world.close()));
}

const p50 = (values: readonly number[]): string => ms(quantile(values, 0.5));
const p50max = (values: readonly number[]): string => `${p50(values)} / ${ms(quantile(values, 1))}`;
const defined = (values: ReadonlyArray<number | undefined>): number[] =>
  values.filter((v): v is number => v !== undefined);
const phasesOf = (timings: readonly RunTiming[]): string =>
  ['nodes', 'plan', 'spread', 'push', 'status']
    .map((phase) =>
      ms(
        quantile(
          timings.map((t) => t.phases[phase] ?? Number.NaN),
          0.5,
        ),
      ),
    )
    .join(' / ');
const seriesOf = (world: BenchWorld): Series => measured.get(world) ?? { fanout: [], small: [], resync: [] };

function rowsFor(label: string, pick: (s: Series) => RunTiming[], goal: string): Row[] {
  const inc = pick(seriesOf(incremental));
  const floor = pick(seriesOf(full));
  const ratio = (f: (t: RunTiming) => number): string =>
    `${((quantile(inc.map(f), 0.5) / quantile(floor.map(f), 0.5)) * 100).toFixed(0)} % of the full resync`;
  const end = (t: RunTiming): number => t.runEnd;
  return [
    [
      `${label}: poke → run ends, p50 / max (incremental)`,
      p50max(inc.map(end)),
      goal,
      `full resync ${p50max(floor.map(end))}`,
      ratio(end),
    ],
    [
      `  poke → round handed out (incremental / full resync)`,
      `${p50(defined(inc.map((t) => t.handedOut)))} / ${p50(defined(floor.map((t) => t.handedOut)))}`,
      'info',
      '',
      '',
    ],
    [
      `  poke → first setPools call (incremental / full resync)`,
      `${p50(defined(inc.map((t) => t.firstSetPools)))} / ${p50(defined(floor.map((t) => t.firstSetPools)))}`,
      'info',
      '',
      '',
    ],
    [
      `  poke → run starts (incremental / full resync)`,
      `${p50(inc.map((t) => t.runStart))} / ${p50(floor.map((t) => t.runStart))}`,
      'info',
      '',
      '',
    ],
    [
      `  phases nodes / plan / spread / push / status, p50 (incremental)`,
      phasesOf(inc),
      'info',
      `full resync ${phasesOf(floor)}`,
      '',
    ],
    [
      `  CPU per patch, poke → quiet (answers' runs included), p50 (incremental / full resync)`,
      `${p50(inc.map((t) => t.cpuMs))} / ${p50(floor.map((t) => t.cpuMs))}`,
      'info',
      '',
      '',
    ],
  ];
}

printTable(
  `warmpool run in process: ${NODES} nodes × ${pools.length} pools — ${machineNote()}`,
  [
    `The reconciler from apps/control-plane/dist over in-memory caches (${NODES} NodeInventories + Nodes, ${pools.length} templates + pools as in bench/warmpool-fleet.bench.ts),`,
    `agents answering at once, statuses written to the cache. Two worlds in this process taking turns patch by patch: the incremental run,`,
    `and the floor/peer, the same reconciler answering every patch with the full resync (pokeResync). ${PATCHES} patches of each pool per world after ${WARMUP} warm-up;`,
    `the fan-out pool ${fanout.low} ↔ ${fanout.high} (every node's set changes), the small pool ${small.name} ${small.replicas} ↔ ${small.replicas + 7}.`,
    `Times from the poke (what the pool informer's event does). The fleet bench adds the apiserver's part (patch → watch event) before it.`,
  ],
  [
    ...rowsFor('fan-out patch', (s) => s.fanout, `≤ ${GOAL_MS} ms patch → handed out, watch included`),
    ...rowsFor('small pool patch', (s) => s.small, `≤ ${GOAL_MS} ms patch → handed out, watch included`),
    [
      'periodic run (full resync, nothing changed), p50 / max of 10 (incremental world / full-resync world)',
      `${p50max(seriesOf(incremental).resync)} / ${p50max(seriesOf(full).resync)}`,
      'info: paid once per interval',
      '',
      '',
    ],
  ],
);
process.exit(0);
