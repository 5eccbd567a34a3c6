// What a node agent's process costs the claims it proxies, apart from its
// claim path. The floor proxy's own code (bench/lib/floor-proxy.ts) runs in
// processes that differ from the bare floor in one thing each (the agents'
// Node flags, a retained heap the size @kubernetes/client-node keeps,
// prom-client's default metrics, the agent's code or its libraries loaded, a
// whole node agent started beside it on its thread or with the floor in a
// worker thread of it), all in front of one fake-sandboxd, next to two bare
// floors and two node agents. Every path takes its turn in every round, so
// drift hits all of them (in an order shuffled each round: bench/lib/order.ts;
// the processes are started in a random order too); each path's CPU per
// claim is compared with the floor's in the same round.
//
// Two processes of the same code are in the list on purpose: how far apart
// they land is how much a process differs from its twin for reasons the code
// does not choose (its placement on the cores, its memory layout). That
// spread stays for all twenty rounds, so one process per path cannot tell
// apart effects smaller than it; REPLICAS starts several processes of each
// path and makes the process, not the round, the sample.
//
//   make build && flock /tmp/warmpool-bench.lock node bench/node-agent-process.bench.ts
//   ONLY="worker|agent's process" REPLICAS=4 ROUNDS=10 … (≈ 8 min)
//
// ONLY (a regular expression) keeps the paths whose names match it, beside
// the first floor and the first node agent. REPLICAS (default 1) processes
// per path; with more than one, the floor's processes' mean in each round is
// the reference. ROUNDS (default 20) rounds of 2 s at 32 in flight per
// process, after a 5 s loaded warm-up of each (≈ 9 min at the defaults);
// HEAP_MB (default 30) sizes the retained heap.
import { loadavg } from 'node:os';
import type { Pool } from 'undici';
import {
  agentCodeLoaded,
  agentNodeFlags,
  agentTo,
  CLAIM,
  fillWarmPool,
  floorInAgentTo,
  floorTo,
  poolTo,
  startSandboxd,
} from './lib/agent-hops.ts';
import { modulesLoadedSource } from './lib/floor-proxy.ts';
import { inRandomOrder, startOrder } from './lib/order.ts';
import { claimFor, emptyTally, meanHopCpuPerRound, type Tally } from './lib/claim-tally.ts';
import type { Server } from './lib/serving-process.ts';
import { meanWithError, median, printTable, signed, type Row } from './lib/table.ts';

const ROUNDS = Number(process.env['ROUNDS'] ?? 20);
const HEAP_MB = Number(process.env['HEAP_MB'] ?? 30);
const REPLICAS = Number(process.env['REPLICAS'] ?? 1);
const ROUND_MS = 2_000;
const WARM_MS = 5_000;
const CONCURRENCY = 32;
const CONNECTIONS = 16;
const WARM_TARGET = 50_000;

/** One way a claim reaches fake-sandboxd, and how its hop process is started. */
interface Variant {
  name: string;
  start(sandboxd: Server): Promise<Server>;
}

// Objects of a few fields, as a loaded library's are: ≈ 100 bytes each.
const retainedHeap = `;globalThis.retained = Array.from({ length: ${HEAP_MB * 10_000} }, (_, i) => ({ i, s: 'x' + i, a: [i, i + 1], o: { k: i } }));`;
const defaultMetrics = `;(await import(${JSON.stringify(import.meta.resolve('prom-client'))})).collectDefaultMetrics();`;

/** Module code, for floorTo's `alongside`, that loads `packages` (from the bench's resolution) and starts nothing. */
const loaded = (...packages: string[]): string => modulesLoadedSource(...packages.map((p) => import.meta.resolve(p)));

const ALL_VARIANTS: Variant[] = [
  { name: 'floor', start: (sandboxd) => floorTo(sandboxd) },
  { name: 'floor, its twin', start: (sandboxd) => floorTo(sandboxd) },
  { name: "floor with the agents' Node flags", start: (sandboxd) => floorTo(sandboxd, { nodeFlags: agentNodeFlags }) },
  { name: `floor with ${HEAP_MB} MB retained`, start: (sandboxd) => floorTo(sandboxd, { alongside: retainedHeap }) },
  {
    name: "floor with prom-client's default metrics",
    start: (sandboxd) => floorTo(sandboxd, { alongside: defaultMetrics }),
  },
  {
    name: "floor with the node agent's code loaded",
    start: (sandboxd) => floorTo(sandboxd, { alongside: agentCodeLoaded }),
  },
  {
    name: 'floor with @kubernetes/client-node loaded',
    start: (sandboxd) => floorTo(sandboxd, { alongside: loaded('@kubernetes/client-node') }),
  },
  {
    name: 'floor with hono, @hono/node-server, zod and prom-client loaded',
    start: (sandboxd) => floorTo(sandboxd, { alongside: loaded('hono', '@hono/node-server', 'zod', 'prom-client') }),
  },
  { name: "floor in a node agent's process", start: (sandboxd) => floorInAgentTo(sandboxd) },
  {
    name: "floor in a worker thread of a node agent's process",
    start: (sandboxd) => floorInAgentTo(sandboxd, { worker: true }),
  },
  { name: 'node agent', start: (sandboxd) => agentTo(sandboxd) },
  { name: 'node agent, its twin', start: (sandboxd) => agentTo(sandboxd) },
];

// The first floor is every path's reference; the first node agent fills the warm pool.
const only = process.env['ONLY'] === undefined ? undefined : new RegExp(process.env['ONLY']);
const VARIANTS = ALL_VARIANTS.filter(
  (v, i) => i === 0 || v.name === 'node agent' || only === undefined || only.test(v.name),
);

interface Path {
  variant: Variant;
  hop: Server;
  pool: Pool;
  warm: Tally;
  loaded: Tally;
}

/** Each process's per-round gaps to `reference`, with their mean and its standard error. */
function gapsOf(paths: Path[], reference: number[]): Array<{ gaps: number[]; mean: number; error: number }> {
  return paths.map((p) => {
    const gaps = p.loaded.hopCpuPerClaim.map((c, i) => c - (reference[i] ?? Number.NaN));
    return { gaps, ...meanWithError(gaps) };
  });
}

/**
 * How a variant's processes land against the floor. With one process: its per-round gaps' mean ± their standard
 * error. With REPLICAS: each process's mean gap is one sample, and ± combines their standard error with the floor's
 * own (`floorError`, the floors' spread around their mean), so how far processes of the same code land apart is
 * inside it on both sides.
 */
function gapText(processGaps: ReturnType<typeof gapsOf>, floorError: number): string {
  const single = processGaps[0] as { gaps: number[]; mean: number; error: number };
  if (processGaps.length === 1)
    return `per round: mean ${signed(single.mean)} ± ${single.error.toFixed(1)} µs, median ${signed(median(single.gaps))} µs`;
  const { mean, error } = meanWithError(processGaps.map((g) => g.mean));
  const each = processGaps.map((g) => signed(g.mean)).join(', ');
  return `over ${processGaps.length} processes: mean ${signed(mean)} ± ${Math.hypot(error, floorError).toFixed(1)} µs (each: ${each})`;
}

/** One variant's row; `floorError` as for gapText (0 for the floor's own row). */
function rowOf(variant: Variant, paths: Path[], reference: number[], floorError: number, sandboxdPid: number): Row {
  const processGaps = gapsOf(paths, reference);
  const claims = paths.reduce((sum, p) => sum + p.loaded.claims, 0);
  const seconds = paths.reduce((sum, p) => sum + p.loaded.seconds, 0);
  const cpu = paths.reduce((sum, p) => sum + (p.loaded.cpu.get(p.hop.pid) ?? Number.NaN), 0) / claims;
  const sandboxdCpu = paths.reduce((sum, p) => sum + (p.loaded.cpu.get(sandboxdPid) ?? Number.NaN), 0) / claims;
  const refused = paths.reduce((sum, p) => sum + p.loaded.errors + p.warm.errors, 0);
  const gap = gapText(processGaps, floorError);
  return [
    `CPU per claim at ${CONCURRENCY} in flight: ${variant.name}`,
    `${cpu.toFixed(1)} µs; − the floor, ${gap}; ${(claims / seconds).toFixed(0)} claims/s per process; fake-sandboxd ${sandboxdCpu.toFixed(1)} µs${refused > 0 ? `; ${refused} refused` : ''}`,
    '—',
    '—',
    refused > 0 ? 'FAIL' : 'info',
  ];
}

async function run(): Promise<void> {
  const loadBefore = loadavg()[0] as number;
  const sandboxd = await startSandboxd('127.0.0.1:0', (r) => `http://${r['address']}`);
  const paths: Path[] = [];
  try {
    for (const variant of startOrder(VARIANTS, REPLICAS)) {
      const hop = await variant.start(sandboxd);
      paths.push({ variant, hop, pool: poolTo(hop.base, CONNECTIONS), warm: emptyTally(), loaded: emptyTally() });
    }
    const agent = paths.find((p) => p.variant.name === 'node agent') as Path;
    await fillWarmPool(agent.pool, agent.variant.name, WARM_TARGET);
    const pids = (p: Path): number[] => [p.hop.pid, sandboxd.pid];
    for (const p of paths) await claimFor(p.pool, CLAIM, WARM_MS, CONCURRENCY, p.warm, pids(p));
    for (let round = 0; round < ROUNDS; round++)
      for (const p of inRandomOrder(paths)) await claimFor(p.pool, CLAIM, ROUND_MS, CONCURRENCY, p.loaded, pids(p));

    const reference = meanHopCpuPerRound(
      paths.filter((p) => p.variant === VARIANTS[0]).map((p) => p.loaded),
      ROUNDS,
    );
    const pathsOf = (v: Variant): Path[] => paths.filter((p) => p.variant === v);
    const floorError = meanWithError(gapsOf(pathsOf(VARIANTS[0] as Variant), reference).map((g) => g.mean)).error;
    const rows = VARIANTS.map((v, i) => rowOf(v, pathsOf(v), reference, i === 0 ? 0 : floorError, sandboxd.pid));
    const spread =
      REPLICAS === 1
        ? '± is the standard error of the per-round gaps'
        : `${REPLICAS} processes per path, the floor's mean in each round the reference; ± is the standard error across a path's processes, combined with the floor's (two paths other than the floor compare without it: the reference cancels)`;
    printTable(
      "node agent process: the floor's proxy in processes that differ in one thing each",
      [
        `${ROUNDS} rounds × ${ROUND_MS / 1000} s per process after a ${WARM_MS / 1000} s warm-up; ${spread}; load average ${loadBefore.toFixed(2)} before, ${(loadavg()[0] as number).toFixed(2)} after`,
      ],
      rows,
    );
  } finally {
    for (const p of paths) await p.pool.close();
    for (const p of paths.reverse()) await p.hop.stop();
    await sandboxd.stop();
  }
}

await run();
