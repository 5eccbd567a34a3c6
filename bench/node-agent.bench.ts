// What the node agent costs a claim: the same warm claim sent straight to
// fake-sandboxd and through the agent in front of it, in one run.
//
// fake-sandboxd and the agent each run as their own process (dist/main.js);
// this process is the client: one undici keep-alive Pool per path, same
// concurrency on all. Pools are huge and refill instant, so every claim is a
// warm hit and the difference is the agent's hop (auth, body limit, schema
// validation, the upstream call, pass-through). The agent runs with
// --no-inventory: the publisher is off the claim path and needs an apiserver.
// The agent runs with the chart's Node flags (`nodeAgent.nodeFlags`: its small
// young generation included), as the DaemonSet runs it; the floor with none.
//
// The agent reaches sandboxd over TCP, and over a unix socket as on a real
// node (`--sandboxd-url unix:/run/sandboxd/sandboxd.sock`): two fake-sandboxd
// processes, one per transport. Clients always reach the agent, and sandboxd
// on the direct path, over TCP. Each agent variant has its floor: the barest
// Node proxy (node:http + undici, no auth, no validation, no framework) over
// the same transport to sandboxd, so the agent's own share of the overhead
// can be told apart. A third TCP path runs the floor's proxy inside a real
// node agent's process (the agent's main started beside it), so the agent's
// CPU above the floor splits into what its process carries (heap, code,
// timers, Node flags) and what its claim path costs. All paths take turns,
// round by round, in an order shuffled each round, so drift on a shared
// machine hits all of them. One process per path: a process's own lean (a
// few µs per claim, kept all run) is inside every gap here;
// bench/node-agent-replicas.bench.ts runs several of each.
//
//   npx tsc -b apps/fake-sandboxd apps/node-agent && node bench/node-agent.bench.ts
//
// Switches, each for the three TCP hops (the floor, the floor in the agent's
// process, the agent):
//   CPU_PROF=<dir>  each writes a V8 CPU profile there when it stops
//                   (floor-*, floor-in-agent-*, agent-*.cpuprofile);
//   TRACE_GC=1      each runs with --trace-gc, and a row sums its collections
//                   and main-thread GC pauses per claim;
//   PERF_MAP=1      each runs with --perf-basic-prof (JIT symbols for `perf`)
//                   and its pid is printed at start, for `perf record -p`;
//                   Node leaves /tmp/perf-<pid>.map for `perf report` and
//                   V8 its log beside it (/tmp/perf-<pid>.v8.log), both to
//                   be removed by hand after.
// AGENT_NODE_FLAGS="…": Node flags for the agents' processes instead of the
// chart's. WARM_MS: how long every path is loaded before the rounds (default
// 5 000).
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pool } from 'undici';
import {
  agentNodeFlags,
  agentTo,
  CLAIM,
  fillWarmPool,
  floorInAgentTo,
  floorTo,
  perfMap,
  poolTo,
  startSandboxd,
  traceGc,
} from './lib/agent-hops.ts';
import { inRandomOrder } from './lib/order.ts';
import { claimFor, emptyTally, quantile, type Tally } from './lib/claim-tally.ts';
import { gcTraceOf } from './lib/gc-trace.ts';
import type { Server } from './lib/serving-process.ts';
import { median, signed } from './lib/table.ts';

const WARM_TARGET = 50_000;
const ROUNDS = 4;
const UNLOADED_ROUND_MS = 1_000;
const LOADED_ROUND_MS = 2_000;
/**
 * Every path loaded this long before anything is measured (WARM_MS to change it): the CPU per claim falls round after
 * round while V8 still compiles the hot path, and a node agent runs for days, so its steady state is what counts. The
 * agent has more code to compile than the floor; what its warm-up costs is printed beside.
 */
const WARM_LOADED_MS = Number(process.env['WARM_MS'] ?? 5_000);
const LOADED_CONCURRENCY = 32;
const CONNECTIONS = 16;

type Row = [metric: string, measured: string, goal: string, anchor: string, ok: boolean | 'info'];

/** One way to reach sandboxd, with the processes whose CPU it costs. */
interface Path {
  name: string;
  pool: Pool;
  /** Watched during loaded rounds: the hop first (if any), then its sandboxd. */
  watch: number[];
  unloaded: Tally;
  loaded: Tally;
  /** The loaded warm-up, not counted in the rounds. */
  warm: Tally;
  /** The short warm-up of connections before it. */
  prewarm: Tally;
}

/** Every claim a path served, warm-ups included. */
const servedBy = (p: Path): number => p.prewarm.claims + p.warm.claims + p.unloaded.claims + p.loaded.claims;

async function run(): Promise<void> {
  const socketDir = mkdtempSync(join(tmpdir(), 'agent-bench-'));
  const servers: Array<[string, Server]> = [];
  const pools: Pool[] = [];
  const loadBefore = loadavg()[0] as number;
  try {
    const sandboxdTcp = await startSandboxd('127.0.0.1:0', (r) => `http://${r['address']}`);
    servers.push(['fake-sandboxd (tcp)', sandboxdTcp]);
    const sandboxdUnix = await startSandboxd(`unix:${join(socketDir, 'sandboxd.sock')}`, (r) => r['address'] as string);
    servers.push(['fake-sandboxd (unix)', sandboxdUnix]);
    const hop = async (name: string, start: () => Promise<Server>): Promise<Server> => {
      const server = await start();
      servers.push([name, server]);
      return server;
    };
    const floorTcp = await hop('floor proxy (tcp)', () => floorTo(sandboxdTcp, { watched: true }));
    const agentTcp = await hop('node agent (tcp)', () => agentTo(sandboxdTcp, true));
    const floorInAgentTcp = await hop('floor in the agent process (tcp)', () => floorInAgentTo(sandboxdTcp));
    const floorUnix = await hop('floor proxy (unix)', () => floorTo(sandboxdUnix));
    const agentUnix = await hop('node agent (unix)', () => agentTo(sandboxdUnix));
    if (perfMap)
      console.error(
        `perf: floor (tcp) pid ${floorTcp.pid}, floor in the agent process (tcp) pid ${floorInAgentTcp.pid}, agent (tcp) pid ${agentTcp.pid}`,
      );

    const path = (name: string, base: string, watch: number[]): Path => {
      const pool = poolTo(base, CONNECTIONS);
      pools.push(pool);
      return {
        name,
        pool,
        watch,
        unloaded: emptyTally(),
        loaded: emptyTally(),
        warm: emptyTally(),
        prewarm: emptyTally(),
      };
    };
    const direct = path('direct', sandboxdTcp.base, [sandboxdTcp.pid]);
    const viaFloorTcp = path('floor (tcp)', floorTcp.base, [floorTcp.pid, sandboxdTcp.pid]);
    const viaAgentTcp = path('agent (tcp)', agentTcp.base, [agentTcp.pid, sandboxdTcp.pid]);
    const viaFloorUnix = path('floor (unix)', floorUnix.base, [floorUnix.pid, sandboxdUnix.pid]);
    const viaAgentUnix = path('agent (unix)', agentUnix.base, [agentUnix.pid, sandboxdUnix.pid]);
    const viaFloorInAgentTcp = path('floor in the agent process (tcp)', floorInAgentTcp.base, [
      floorInAgentTcp.pid,
      sandboxdTcp.pid,
    ]);
    const paths = [direct, viaFloorTcp, viaFloorInAgentTcp, viaAgentTcp, viaFloorUnix, viaAgentUnix];

    await Promise.all([viaAgentTcp, viaAgentUnix].map((agent) => fillWarmPool(agent.pool, agent.name, WARM_TARGET)));
    // Warm up connections and every JIT.
    for (const p of paths) await claimFor(p.pool, CLAIM, 500, 4, p.prewarm);
    for (const p of paths) await claimFor(p.pool, CLAIM, WARM_LOADED_MS, LOADED_CONCURRENCY, p.warm, p.watch);

    for (let round = 0; round < ROUNDS; round++) {
      for (const p of inRandomOrder(paths)) await claimFor(p.pool, CLAIM, UNLOADED_ROUND_MS, 1, p.unloaded);
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const p of inRandomOrder(paths))
        await claimFor(p.pool, CLAIM, LOADED_ROUND_MS, LOADED_CONCURRENCY, p.loaded, p.watch);
    }
    const loadAfter = loadavg()[0] as number;

    const q = (t: Tally, p: number): number => quantile(t.latenciesMs, p);
    const added = (via: Path, p: number): number => q(via.unloaded, p) - q(direct.unloaded, p);
    const rate = (t: Tally): number => t.claims / t.seconds;
    const share = (via: Path): number => rate(via.loaded) / rate(direct.loaded);
    const ms = (v: number): string => `${v.toFixed(3)} ms`;
    const perSecond = (v: number): string => `${v.toLocaleString('en-US', { maximumFractionDigits: 0 })}/s`;
    const percent = (v: number): string => `${(v * 100).toFixed(1)} %`;
    const cpuOf = (p: Path, i: number, t: Tally = p.loaded): number =>
      (t.cpu.get(p.watch[i] as number) ?? Number.NaN) / t.claims;
    const cpuPerClaim = (p: Path, i: number): string => `${cpuOf(p, i).toFixed(1)} µs`;
    const roundGaps = (agent: Path, floor: Path): string => {
      const gaps = agent.loaded.hopCpuPerClaim.map((cpu, i) => cpu - (floor.loaded.hopCpuPerClaim[i] ?? Number.NaN));
      return `${gaps.map(signed).join(', ')} µs (median of the rounds ${signed(median(gaps))} µs)`;
    };
    const scheduleText = (p: Path): string => {
      const { userMicros, systemMicros, voluntarySwitches, involuntarySwitches } = p.loaded.hopSchedule;
      const per = (v: number): number => v / p.loaded.claims;
      return `${per(userMicros).toFixed(1)} + ${per(systemMicros).toFixed(1)} µs, ${per(voluntarySwitches).toFixed(3)} + ${per(involuntarySwitches).toFixed(3)}`;
    };
    const watchedHops: Array<[Path, Server]> = [
      [viaFloorTcp, floorTcp],
      [viaFloorInAgentTcp, floorInAgentTcp],
      [viaAgentTcp, agentTcp],
    ];
    const gcText = (p: Path, server: Server): string => {
      const { scavenges, markCompacts, pauseMs, markingStepsMs } = gcTraceOf(server.logFile);
      const served = servedBy(p);
      const perClaim = (ms: number): string => ((ms * 1_000) / served).toFixed(1);
      return `${scavenges} (${Math.round(served / scavenges)}), ${markCompacts}, ${perClaim(pauseMs)} + ${perClaim(markingStepsMs)} µs`;
    };
    const errors = paths.reduce((n, p) => n + p.unloaded.errors + p.loaded.errors, 0);

    // Issue 21's goals are the floor's numbers from the same run: what any Node hop costs, plus a small margin.
    const agentRows = (agent: Path, floor: Path, transport: string): Row[] => {
      const latencyRatio = added(agent, 0.5) / added(floor, 0.5);
      const shareGap = (share(floor) - share(agent)) * 100;
      const cpuGap = cpuOf(agent, 0) - cpuOf(floor, 0);
      return [
        [
          `added latency p50, 1 in flight (${transport}): agent / floor`,
          `${ms(added(agent, 0.5))} / ${ms(added(floor, 0.5))} (${latencyRatio.toFixed(2)}×)`,
          '≤ floor × 1.15',
          'cocoonstack node gateway p50 0.039 ms',
          latencyRatio <= 1.15,
        ],
        [
          `added latency p95 / p99, 1 in flight (${transport})`,
          `${ms(added(agent, 0.95))} / ${ms(added(agent, 0.99))}`,
          '—',
          'cocoonstack node gateway p95 0.053 ms',
          'info',
        ],
        [
          `claim p50 / p99 via agent, 1 in flight (${transport})`,
          `${ms(q(agent.unloaded, 0.5))} / ${ms(q(agent.unloaded, 0.99))}`,
          '—',
          '—',
          'info',
        ],
        [
          `claims/s via agent, ${LOADED_CONCURRENCY} in flight (${transport})`,
          perSecond(rate(agent.loaded)),
          '—',
          '—',
          'info',
        ],
        [
          `throughput, share of direct (${transport}): agent / floor`,
          `${percent(share(agent))} / ${percent(share(floor))} (${shareGap.toFixed(1)} points below)`,
          '≥ floor − 3 points',
          '—',
          shareGap <= 3,
        ],
        [
          `added latency p50 / p99, ${LOADED_CONCURRENCY} in flight (${transport})`,
          `${ms(q(agent.loaded, 0.5) - q(direct.loaded, 0.5))} / ${ms(q(agent.loaded, 0.99) - q(direct.loaded, 0.99))}`,
          '—',
          '—',
          'info',
        ],
        [
          `CPU per claim, ${LOADED_CONCURRENCY} in flight (${transport}): agent / floor`,
          `${cpuPerClaim(agent, 0)} / ${cpuPerClaim(floor, 0)} (+${cpuGap.toFixed(1)} µs)`,
          '≤ floor + 10 µs',
          '—',
          cpuGap <= 10,
        ],
        [
          `CPU per claim, ${LOADED_CONCURRENCY} in flight (${transport}): agent − floor in each of the ${ROUNDS} rounds (the two in turn, so drift hits both)`,
          roundGaps(agent, floor),
          '—',
          '—',
          'info',
        ],
        [
          `CPU per claim during the ${WARM_LOADED_MS / 1000} s loaded warm-up, not measured above (${transport}): agent / floor`,
          `${cpuOf(agent, 0, agent.warm).toFixed(1)} µs / ${cpuOf(floor, 0, floor.warm).toFixed(1)} µs`,
          '—',
          '—',
          'info',
        ],
        [
          `per claim, ${LOADED_CONCURRENCY} in flight (${transport}): user + system CPU, main-thread wake-ups (voluntary switches) + preemptions: agent / floor`,
          `${scheduleText(agent)} / ${scheduleText(floor)}`,
          '—',
          '—',
          'info',
        ],
        [
          `CPU per claim of fake-sandboxd behind the agent / the floor (${transport})`,
          `${cpuPerClaim(agent, 1)} / ${cpuPerClaim(floor, 1)}`,
          '—',
          '—',
          'info',
        ],
        [
          `floor (bare node:http + undici proxy): added p99, 1 in flight (${transport})`,
          ms(added(floor, 0.99)),
          '—',
          '—',
          'info',
        ],
      ];
    };
    const rows: Row[] = [
      [
        'claim p50 / p99 direct, 1 in flight',
        `${ms(q(direct.unloaded, 0.5))} / ${ms(q(direct.unloaded, 0.99))}`,
        '—',
        '—',
        'info',
      ],
      [
        `claims/s direct, ${LOADED_CONCURRENCY} in flight / fake-sandboxd CPU per claim`,
        `${perSecond(rate(direct.loaded))} / ${cpuPerClaim(direct, 0)}`,
        '—',
        '—',
        'info',
      ],
      ...agentRows(viaAgentTcp, viaFloorTcp, 'tcp'),
      [
        `CPU per claim, ${LOADED_CONCURRENCY} in flight (tcp): the floor proxy inside a node agent's process (its heap, code, timers and Node flags, none of its claim path) / the floor alone / the agent`,
        `${cpuPerClaim(viaFloorInAgentTcp, 0)} / ${cpuPerClaim(viaFloorTcp, 0)} / ${cpuPerClaim(viaAgentTcp, 0)}; the process's part, in each round: ${roundGaps(viaFloorInAgentTcp, viaFloorTcp)}; the claim path's part: ${roundGaps(viaAgentTcp, viaFloorInAgentTcp)}`,
        '—',
        '—',
        'info',
      ],
      [
        `per claim, ${LOADED_CONCURRENCY} in flight (tcp): user + system CPU, main-thread wake-ups + preemptions of the floor proxy inside a node agent's process`,
        scheduleText(viaFloorInAgentTcp),
        '—',
        '—',
        'info',
      ],
      ...(traceGc
        ? [
            [
              "GC over each process's life (tcp, --trace-gc): scavenges (claims per scavenge), mark-compacts, main-thread pause + incremental marking steps per claim served: floor / floor in the agent process / agent",
              watchedHops.map(([p, server]) => gcText(p, server)).join(' / '),
              '—',
              '—',
              'info',
            ] satisfies Row,
          ]
        : []),
      ...agentRows(viaAgentUnix, viaFloorUnix, 'unix socket'),
      ['claims refused (non-200)', String(errors), '0', '—', errors === 0],
    ];
    const total = paths.reduce((n, p) => n + p.unloaded.claims + p.loaded.claims, 0);
    console.log(
      `node agent overhead: fake-sandboxd (one on TCP, one on a unix socket), the agents (Node flags: ${agentNodeFlags.join(' ')}) and the floor proxies as separate processes, client = undici Pools ` +
        `(${CONNECTIONS} keep-alive conns) in this process; ${total.toLocaleString('en-US')} warm claims, ${paths.map((p) => p.name).join(' / ')} rounds alternating; ` +
        `load average ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after\n`,
    );
    console.log('| metric | measured | goal | anchor | verdict |');
    console.log('|---|---|---|---|---|');
    for (const [name, measured, goal, anchor, ok] of rows)
      console.log(`| ${name} | ${measured} | ${goal} | ${anchor} | ${ok === 'info' ? 'info' : ok ? 'PASS' : 'FAIL'} |`);
    if (rows.some((r) => r[4] === false)) process.exitCode = 1;
  } finally {
    for (const pool of pools) await pool.close();
    // Hops first, so no agent sees its sandboxd go away under it.
    for (const [name, server] of servers.reverse()) {
      const code = await server.stop();
      if (code !== 0) {
        console.error(`${name} exited with ${code} on SIGTERM`);
        process.exitCode = 1;
      }
    }
    rmSync(socketDir, { recursive: true, force: true });
  }
}

await run();
