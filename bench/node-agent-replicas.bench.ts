// Issue 21's three measures of the node agent's hop (added latency at 1 in
// flight, share of direct throughput at 32, CPU per claim), with several
// processes of the floor and of the agent instead of one each.
//
// A process lands a few µs per claim above or below its twin for reasons its
// code does not choose (placement on the cores, memory layout), and keeps
// that for the whole run (bench/node-agent-process.bench.ts shows it). With
// one process per path, as in bench/node-agent.bench.ts, that spread is part
// of every gap and cannot be told apart from it. Here each process is one
// sample: a path's measure is the mean over its processes, ± their standard
// error, and a gap's ± combines the two paths'.
//
// All processes sit in front of one fake-sandboxd, over TCP, or with
// TRANSPORT=unix over a unix socket as the real sandboxd is reached on a node
// (direct claims then reach it over that socket too; the client reaches the
// hops over TCP either way); direct claims to it are the reference for
// latency and share. Every round, each process takes a
// 1 s turn at 1 in flight and a 2 s turn at 32 in flight, in an order
// shuffled each round (bench/lib/order.ts); the processes are started in a
// random order too.
//
//   make build && flock /tmp/warmpool-bench.lock node bench/node-agent-replicas.bench.ts
//   TRANSPORT=unix … (sandboxd on a unix socket)
//
// REPLICAS (default 4) processes per hop, ROUNDS (default 10): ≈ 6 min.
// AGENT_NODE_FLAGS replaces the chart's Node flags for the agents;
// ALT_AGENT_FLAGS adds as many agents with other flags (≈ 9 min); with
// `--import=<repo>/bench/lib/agent-duties-off.ts?off=<duties>` among them, those
// agents run with some of their duties switched off (what each costs the hop);
// WORKER_AGENTS=1 adds as many processes that serve claims from a second
// agent in a worker thread beside their own (bench/lib/agent-hops.ts).
//
// The share of direct follows the CPU every process spends per claim, not
// the hop's alone: the machine's cores are what the claims wait for. So the
// last rows give, per path, the CPU per claim of the hop, of fake-sandboxd
// and of this process (the client) during its loaded turns, their sum, and
// how many claims each served per wake-up of its main thread.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pool } from 'undici';
import {
  agentInWorkerTo,
  agentNodeFlags,
  agentTo,
  CLAIM,
  fillWarmPool,
  floorTo,
  poolTo,
  startSandboxd,
} from './lib/agent-hops.ts';
import { flagsFromEnv } from './lib/chart-flags.ts';
import { inRandomOrder, startOrder } from './lib/order.ts';
import { claimFor, emptyTally, meanHopCpuPerRound, quantile, type Tally } from './lib/claim-tally.ts';
import { scheduleOf } from './lib/proc.ts';
import type { Server } from './lib/serving-process.ts';
import { meanWithError, printTable, signed, type Row } from './lib/table.ts';

const REPLICAS = Number(process.env['REPLICAS'] ?? 4);
const ROUNDS = Number(process.env['ROUNDS'] ?? 10);
const UNLOADED_MS = 1_000;
const LOADED_MS = 2_000;
const WARM_MS = 5_000;
const CONCURRENCY = 32;
const CONNECTIONS = 16;
const WARM_TARGET = 50_000;

// ALT_AGENT_FLAGS="…" adds REPLICAS agents started with those Node flags instead of the chart's, measured against
// the same floors in the same rounds.
const ALT_AGENT_FLAGS = flagsFromEnv('ALT_AGENT_FLAGS');
const WORKER_AGENTS = process.env['WORKER_AGENTS'] === '1';
const TRANSPORT = process.env['TRANSPORT'] === 'unix' ? 'unix' : 'tcp';

type Hop = 'floor' | 'agent' | 'agent, other flags' | 'agent in a worker thread';

/** One process claims go through (or none, for direct), and what its turns tallied. */
interface Path {
  hop: Hop | 'direct';
  /** The process whose CPU is counted: the hop's, or fake-sandboxd's for direct. */
  pid: number;
  pool: Pool;
  warm: Tally;
  unloaded: Tally;
  loaded: Tally;
  /** Each watched process's main-thread sleeps (voluntary context switches) over the loaded turns: its wake-ups. */
  sleeps: Map<number, number>;
}

/** One process's three measures, the first two against direct. */
interface Measures {
  addedP50Ms: number;
  share: number;
  /** Mean over the rounds of its CPU per claim minus the floors' mean in that round. */
  cpuGapMicros: number;
}

const rate = (t: Tally): number => t.claims / t.seconds;
const p50 = (t: Tally): number => quantile(t.latenciesMs, 0.5);

function measuresOf(p: Path, direct: Path, floorCpuPerRound: number[]): Measures {
  const gaps = p.loaded.hopCpuPerClaim.map((cpu, i) => cpu - (floorCpuPerRound[i] ?? Number.NaN));
  return {
    addedP50Ms: p50(p.unloaded) - p50(direct.unloaded),
    share: rate(p.loaded) / rate(direct.loaded),
    cpuGapMicros: meanWithError(gaps).mean,
  };
}

/** A path's measure over its processes, with the standard error; the values each process gave. */
function across(measures: Measures[], pick: (m: Measures) => number): { mean: number; error: number; each: number[] } {
  const each = measures.map(pick);
  return { ...meanWithError(each), each };
}

type Across = ReturnType<typeof across>;

/** One of the measures: how each path's processes give it, and how a gap to the floor is judged. */
interface Measure {
  label: string;
  unit: string;
  pick(m: Measures): number;
  /** The gap (or ratio) to the floor, its ± and whether it meets the goal. */
  judge(agent: Across, floor: Across): { text: string; met: boolean };
  goal: string;
}

const MEASURES: Measure[] = [
  {
    label: 'added latency p50 at 1 in flight (over direct)',
    unit: 'µs',
    pick: (m) => m.addedP50Ms * 1_000,
    judge: (a, f) => {
      const ratio = a.mean / f.mean;
      // Independent processes: a ratio's relative errors, like a difference's errors, add in quadrature.
      const error = ratio * Math.hypot(a.error / a.mean, f.error / f.mean);
      return { text: `${ratio.toFixed(2)}× ± ${error.toFixed(2)} the floor's`, met: ratio <= 1.15 };
    },
    goal: '≤ floor × 1.15',
  },
  {
    label: `share of direct at ${CONCURRENCY} in flight`,
    unit: '%',
    pick: (m) => m.share * 100,
    judge: (a, f) => {
      const gap = a.mean - f.mean;
      return { text: `${signed(gap)} ± ${Math.hypot(a.error, f.error).toFixed(1)} points`, met: gap >= -3 };
    },
    goal: '≥ floor − 3 points',
  },
  {
    label: `CPU per claim at ${CONCURRENCY} in flight, − the floors' mean in the round`,
    unit: 'µs',
    pick: (m) => m.cpuGapMicros,
    judge: (a, f) => {
      const gap = a.mean - f.mean;
      return { text: `${signed(gap)} ± ${Math.hypot(a.error, f.error).toFixed(1)} µs`, met: gap <= 10 };
    },
    goal: '≤ floor + 10 µs',
  },
];

/** Each measure: the floor's processes, then each agent kind's and its gap to the floor. */
function rowsOf(floor: Measures[], agents: Array<[name: string, measures: Measures[]]>): Row[] {
  const text = (v: Across, unit: string): string =>
    `${v.mean.toFixed(1)} ± ${v.error.toFixed(1)} ${unit} (${v.each.map((x) => x.toFixed(1)).join(', ')})`;
  return MEASURES.flatMap((measure): Row[] => {
    const f = across(floor, measure.pick);
    return [
      [`${measure.label}: floor (each process)`, text(f, measure.unit), '—', '—', 'info'],
      ...agents.map(([name, measures]): Row => {
        const a = across(measures, measure.pick);
        const { text: gap, met } = measure.judge(a, f);
        return [
          `${measure.label}: ${name}`,
          `${text(a, measure.unit)}; ${gap}`,
          measure.goal,
          '—',
          met ? 'PASS' : 'FAIL',
        ];
      }),
    ];
  });
}

/** A turn at 32 in flight through `p`, counting the CPU and the main-thread sleeps of `pids` (the hop first). */
async function loadedTurn(p: Path, pids: number[]): Promise<void> {
  const before = pids.map((pid) => scheduleOf(pid).voluntarySwitches);
  await claimFor(p.pool, CLAIM, LOADED_MS, CONCURRENCY, p.loaded, pids);
  pids.forEach((pid, i) =>
    p.sleeps.set(pid, (p.sleeps.get(pid) ?? 0) + scheduleOf(pid).voluntarySwitches - (before[i] as number)),
  );
}

/** The processes whose CPU a loaded turn of `p` counts: the hop first, then fake-sandboxd, then this process. */
function watched(p: Path, sandboxd: Server): number[] {
  return p.hop === 'direct' ? [p.pid, process.pid] : [p.pid, sandboxd.pid, process.pid];
}

/**
 * Per path, the CPU per claim of the machine's processes at 32 in flight (mean over the path's processes): the hop,
 * fake-sandboxd, this process; their sum, and the cores they kept busy at the path's rate. Then how many claims each
 * served per wake-up of its main thread.
 */
function machineRows(direct: Path, groups: Array<[name: string, paths: Path[]]>, sandboxdPid: number): Row[] {
  const perClaim = (p: Path, pid: number): number => (p.loaded.cpu.get(pid) ?? 0) / Math.max(1, p.loaded.claims);
  const perWakeup = (p: Path, pid: number): number => p.loaded.claims / Math.max(1, p.sleeps.get(pid) ?? 0);
  const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const row = (name: string, paths: Path[]): Row => {
    const hopMicros = mean(paths.map((p) => perClaim(p, p.pid)));
    const sandboxdMicros = mean(paths.map((p) => (p === direct ? 0 : perClaim(p, sandboxdPid))));
    const clientMicros = mean(paths.map((p) => perClaim(p, process.pid)));
    const total = hopMicros + sandboxdMicros + clientMicros;
    const cores = mean(paths.map((p) => rate(p.loaded))) * total * 1e-6;
    const batching = (pid: (p: Path) => number): string => mean(paths.map((p) => perWakeup(p, pid(p)))).toFixed(1);
    const sandboxdBatching = paths.includes(direct) ? '' : ` fake-sandboxd ${batching(() => sandboxdPid)},`;
    return [
      `CPU per claim at ${CONCURRENCY} in flight, the machine's processes: ${name}`,
      `${total.toFixed(1)} µs = hop ${hopMicros.toFixed(1)} + fake-sandboxd ${sandboxdMicros.toFixed(1)} + client ${clientMicros.toFixed(1)}; ${cores.toFixed(2)} cores busy; claims per main-thread wake-up: hop ${batching((p) => p.pid)},${sandboxdBatching} client ${batching(() => process.pid)}`,
      '—',
      '—',
      'info',
    ];
  };
  return [row('direct (the hop is fake-sandboxd)', [direct]), ...groups.map(([name, paths]) => row(name, paths))];
}

/** The floors' and agents' processes, started in a random order; each is in `servers` as soon as it serves. */
async function startPaths(sandboxd: Server, servers: Server[]): Promise<{ direct: Path; hops: Path[] }> {
  const path = (hop: Path['hop'], pid: number, base: string): Path => ({
    hop,
    pid,
    pool: poolTo(base, CONNECTIONS),
    warm: emptyTally(),
    unloaded: emptyTally(),
    loaded: emptyTally(),
    sleeps: new Map(),
  });
  const hops: Path[] = [];
  const each: Hop[] = [
    'floor',
    'agent',
    ...(ALT_AGENT_FLAGS === undefined ? [] : ['agent, other flags' as const]),
    ...(WORKER_AGENTS ? ['agent in a worker thread' as const] : []),
  ];
  const start: Record<Hop, () => Promise<Server>> = {
    floor: () => floorTo(sandboxd),
    agent: () => agentTo(sandboxd),
    'agent, other flags': () => agentTo(sandboxd, false, ALT_AGENT_FLAGS),
    'agent in a worker thread': () => agentInWorkerTo(sandboxd),
  };
  for (const hop of startOrder(each, REPLICAS)) {
    const server = await start[hop]();
    servers.push(server);
    hops.push(path(hop, server.pid, server.base));
  }
  return { direct: path('direct', sandboxd.pid, sandboxd.base), hops };
}

async function run(): Promise<void> {
  const loadBefore = loadavg()[0] as number;
  const socketDir = TRANSPORT === 'unix' ? mkdtempSync(join(tmpdir(), 'agent-replicas-')) : undefined;
  const sandboxd =
    socketDir === undefined
      ? await startSandboxd('127.0.0.1:0', (r) => `http://${r['address']}`)
      : await startSandboxd(`unix:${join(socketDir, 'sandboxd.sock')}`, (r) => r['address'] as string);
  const servers: Server[] = [];
  const pools: Pool[] = [];
  try {
    const { direct, hops } = await startPaths(sandboxd, servers);
    const paths = [direct, ...hops];
    pools.push(...paths.map((p) => p.pool));
    const firstAgent = hops.find((p) => p.hop === 'agent') as Path;
    await fillWarmPool(firstAgent.pool, 'node agent', WARM_TARGET);
    for (const p of paths) await claimFor(p.pool, CLAIM, WARM_MS, CONCURRENCY, p.warm, [p.pid]);
    for (let round = 0; round < ROUNDS; round++)
      for (const p of inRandomOrder(paths)) {
        await claimFor(p.pool, CLAIM, UNLOADED_MS, 1, p.unloaded);
        await loadedTurn(p, watched(p, sandboxd));
      }

    const floors = hops.filter((p) => p.hop === 'floor');
    const reference = meanHopCpuPerRound(
      floors.map((p) => p.loaded),
      ROUNDS,
    );
    const measured = (hop: Hop): Measures[] =>
      hops.filter((p) => p.hop === hop).map((p) => measuresOf(p, direct, reference));
    const agentKinds: Array<[Hop, string]> = [
      ['agent', `agent (${agentNodeFlags.join(' ')})`],
      ...(ALT_AGENT_FLAGS === undefined
        ? []
        : [['agent, other flags', `agent (${ALT_AGENT_FLAGS.join(' ')})`] as [Hop, string]]),
      ...(WORKER_AGENTS
        ? [['agent in a worker thread', 'a second agent in a worker thread of an agent'] as [Hop, string]]
        : []),
    ];
    const refused = paths.reduce((n, p) => n + p.warm.errors + p.unloaded.errors + p.loaded.errors, 0);
    const rows: Row[] = [
      [
        'direct to fake-sandboxd: p50 at 1 in flight; claims/s at 32 in flight',
        `${(p50(direct.unloaded) * 1_000).toFixed(1)} µs; ${rate(direct.loaded).toFixed(0)}/s`,
        '—',
        '—',
        'info',
      ],
      ...rowsOf(
        measured('floor'),
        agentKinds.map(([hop, name]): [string, Measures[]] => [name, measured(hop)]),
      ),
      ...machineRows(
        direct,
        [['floor', 'floor'] as [Hop, string], ...agentKinds].map(([hop, name]): [string, Path[]] => [
          name,
          hops.filter((p) => p.hop === hop),
        ]),
        sandboxd.pid,
      ),
      ['claims refused (non-200), every path', String(refused), '0', '—', refused === 0 ? 'PASS' : 'FAIL'],
    ];
    printTable(
      `node agent hop, ${REPLICAS} processes of the floor and ${REPLICAS} of the agent, sandboxd over ${TRANSPORT === 'unix' ? 'a unix socket' : 'TCP'}`,
      [
        `${ROUNDS} rounds of ${UNLOADED_MS / 1000} s at 1 in flight and ${LOADED_MS / 1000} s at ${CONCURRENCY} per process, after a ${WARM_MS / 1000} s warm-up at ${CONCURRENCY}; ± is the standard error across processes (combined for a gap); load average ${loadBefore.toFixed(2)} before, ${(loadavg()[0] as number).toFixed(2)} after`,
      ],
      rows,
    );
  } finally {
    for (const pool of pools) await pool.close();
    for (const server of servers.reverse()) await server.stop();
    await sandboxd.stop();
    if (socketDir !== undefined) rmSync(socketDir, { recursive: true, force: true });
  }
}

await run();
