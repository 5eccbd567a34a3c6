// Fleet simulation: 1 000 simulated nodes (node agent + fake-sandboxd each,
// each on its own loopback port, each publishing its NodeInventory) × 200
// warm pools against a real kube-apiserver + etcd, the control plane as its
// own process with the chart's V8 flags. Measures reconcile time and fan-out
// time (also for patches that land in the previous fan-out's inventory
// republish storm), the apiserver's writes per second at steady state (by
// resource, from the apiserver's own apiserver_request_total) and the control
// plane's RSS. The simulated nodes run on FLEET_THREADS worker threads
// (default 2, one per core).
//   make build && node bench/warmpool-fleet.bench.ts   (CPU_PROF=<dir> profiles the control plane)
// Patch → round handed out is the benchmark's own watch of the pool (the apiserver's part) plus the control plane's
// pool_change_answer histogram (its informer's event → the round handed out), read once before and once after each
// patch: nothing polls the control plane meanwhile. FLEET_POLL_MS=<ms> also polls its generation gauge on /metrics
// every <ms> ms, as this benchmark used to (every scrape serialises every series: it costs the control plane CPU).
// FLEET_TRACE_APISERVER=1 adds the apiserver's own time for each patch and the requests it served meanwhile.
// FLEET_APISERVER_PROF=<dir> profiles the apiserver over the first 30 s of the fan-outs (<dir>/fanout-30s.pb.gz, read
// with `go tool pprof -top`) and logs the requests it served during the fan-outs, by verb and resource.
// FLEET_FILL_TIMEOUT_MS (default 180 000) bounds apply → every pool READY = DESIRED; FLEET_STEADY_MS (default 60 000)
// is the steady-state window (a shorter one gets to the fan-outs sooner on a loaded machine).
// Bounded: about 4 minutes on 2 cores (fleet start, fill, a 60 s steady window, 5 fan-outs 8-10 s apart, 3 in a storm).
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { sleep, startCluster } from '@warmpool/harness';
import { addDelta, parseRequests, profileApiserver } from './lib/apiserver-pprof.ts';
import {
  fetchMetrics,
  scrapeLatencies,
  scrapeWrites,
  total,
  writesBetween,
  type WriteCounts,
} from './lib/apiserver-metrics.ts';
import { chartNodeFlags } from './lib/chart-flags.ts';
import { startControlPlaneProcess } from './lib/control-plane.ts';
import { cpuMsOf, machineBusyMs, memoryOf } from './lib/proc.ts';
import { allReady, Pools, type PoolSpec } from './lib/pools.ts';
import { fanoutPool, fleetPoolSpecs } from './lib/fleet-pools.ts';
import {
  answerBetween,
  apiserverBetween,
  PoolWatch,
  type AnswerStage,
  type ApiserverSide,
} from './lib/handout-trace.ts';
import { InventoryWriteLog, writesLine, type WritesSummary } from './lib/inventory-writes.ts';
import { histogramDelta, sum, type HistogramSnapshot, type Sample } from './lib/prom-text.ts';
import { TargetTracker, type Propagation } from './lib/target-tracker.ts';
import { startThreadedFleet } from './lib/threaded-fleet.ts';
import { machineNote, mib, ms, pass, printTable, quantile, seconds, type Row } from './lib/table.ts';

const NODES = Number(process.env['FLEET_NODES'] ?? 1_000);
const POOLS = Number(process.env['FLEET_POOLS'] ?? 200);
const INTERVAL_S = 5;
const STEADY_WINDOW_MS = Number(process.env['FLEET_STEADY_MS'] ?? 60_000);
const FANOUT_REPEATS = 5;
const FANOUT_QUIET_MS = 8_000;
const STORM_REPEATS = 3;
const THREADS = Number(process.env['FLEET_THREADS'] ?? 2);
const POLL_MS = process.env['FLEET_POLL_MS'] === undefined ? undefined : Number(process.env['FLEET_POLL_MS']);
const FILL_TIMEOUT_MS = Number(process.env['FLEET_FILL_TIMEOUT_MS'] ?? 180_000);
const RSS_GOAL_BYTES = 512 * 1024 * 1024; // the chart's memory limit

const specs: PoolSpec[] = fleetPoolSpecs(POOLS);
const desiredTotal = specs.reduce((s, p) => s + p.replicas, 0);
const FANOUT = fanoutPool(NODES);

const tracker = new TargetTracker(FANOUT.image);

const log = (line: string): void => console.error(`[fleet bench] ${line}`);

log(`starting kube-apiserver + etcd`);
const apiserverProfDir = process.env['FLEET_APISERVER_PROF'];
if (apiserverProfDir !== undefined) mkdirSync(apiserverProfDir, { recursive: true });
const cluster = await startCluster({ name: 'bench-fleet', apiserverProfiling: apiserverProfDir !== undefined });
const token = randomBytes(24).toString('hex');
log(`starting ${NODES} simulated nodes`);
const fleet = await startThreadedFleet({
  nodes: NODES,
  threads: THREADS,
  kubeconfigPath: cluster.kubeconfigPath,
  token,
  // Room for the long tail: a 400-replica pool on a small fleet still fits.
  sandboxd: { refillRate: 200, refillConcurrency: 32, bootMs: 50, room: 2_000, maxClaims: 1_000 },
  // Production cadence for the inventory (30 s heartbeat, 5 s debounce); a
  // slower sandboxd poll keeps the 1 000 in-process agents off the CPU.
  agent: { publishIntervalMs: 30_000, minPublishGapMs: 5_000, pollIntervalMs: 5_000, sandboxdConnections: 2 },
  concurrency: 50,
  onSetPools: tracker.onSetPools,
  log,
});
log(`fleet up in ${seconds(fleet.startupMs)}; starting the control plane`);
// Every NodeInventory write from here on, with what it carried: what a fan-out costs the apiserver, and why.
const inventoryWrites = new InventoryWriteLog(cluster.kubeConfig);
await inventoryWrites.start();
// CPU_PROF=<dir>: the control plane writes a V8 CPU profile there when it stops.
const profileDir = process.env['CPU_PROF'];
const controlPlane = await startControlPlaneProcess({
  cluster,
  token,
  interval: `${INTERVAL_S}s`,
  ...(profileDir !== undefined
    ? { nodeArgs: [...chartNodeFlags('controlPlane'), '--cpu-prof', `--cpu-prof-dir=${profileDir}`] }
    : {}),
});
const pools = new Pools(cluster.kubeConfig);
const fanoutWatch = new PoolWatch(pools.pools, pools.namespace, FANOUT.name);

interface Measured {
  applyMs: number;
  fillMs: number;
  steadyWrites: WriteCounts;
  reconcileSteady: HistogramSnapshot;
  setPoolsSteady: HistogramSnapshot;
  fanouts: Propagation[];
  storms: Propagation[];
  /** Where each fan-out / storm patch's time went before its round was handed out. */
  fanoutRounds: HandOut[];
  stormRounds: HandOut[];
  /** NodeInventory writes from each fan-out patch sent to the next patch sent. */
  fanoutWrites: WritesSummary[];
  reconcileFanout: HistogramSnapshot;
  setPoolsFanout: HistogramSnapshot;
  cpMemory: { rss: number; peak: number; heapUsed: number; heapTotal: number; external: number };
  setPoolsErrors: number;
  hostLagMs: { p99: number; max: number };
  cpLagMaxMs: number;
  reconcileStorm: HistogramSnapshot;
  cpLagStormMs: number;
  /** Times the control plane stepped down (no Lease renewal within the renew deadline): each new term pushes every node. */
  stepDowns: number;
}

/** One patch's way to its round, in ms from the patch request sent. */
interface HandOut {
  /** performance.now() when the patch request was sent. */
  sentAt: number;
  /** The apiserver answered the patch request. */
  answered: number;
  /** The benchmark's own watch of the pool delivered the change: the apiserver's part. */
  watched: number | undefined;
  /** The control plane's times from its informer's event to each stage of the run that answered it. */
  controlPlane: Partial<Record<AnswerStage, number>>;
  /** Patch → round handed out: the watch's part plus the control plane's. */
  handedOut: number | undefined;
  /** With FLEET_POLL_MS: when a poll of the generation gauge first saw the round. */
  polled: number | undefined;
  /** Reconcile runs from just before the patch until its last node applied. */
  runs: number;
  /** With FLEET_TRACE_APISERVER: the apiserver's own view of the patch, and what else it served until its answer. */
  apiserver: ApiserverSide | undefined;
  /** CPU ms each used from the patch sent until its answer, and the whole machine's (every core, every process). */
  cpu: { apiserver: number; etcd: number; controlPlane: number; bench: number; machine: number };
}

/**
 * With FLEET_TRACE_APISERVER=1, the apiserver's latency series (its /metrics is large: scraping it twice a patch loads
 * a busy apiserver, so only on request); undefined when off or when the scrape failed.
 */
async function apiserverLatencies(): Promise<Sample[] | undefined> {
  if (process.env['FLEET_TRACE_APISERVER'] !== '1') return undefined;
  return scrapeLatencies(cluster.server, cluster.adminTls).catch(() => undefined);
}

/** CPU ms used so far by the processes of the run, and by the whole machine. */
function cpuNow(): HandOut['cpu'] {
  const pids = cluster.pids();
  const own = process.cpuUsage();
  return {
    apiserver: cpuMsOf(pids.apiserver),
    etcd: cpuMsOf(pids.etcd),
    controlPlane: cpuMsOf(controlPlane.pid),
    bench: (own.user + own.system) / 1000,
    machine: machineBusyMs(),
  };
}

/** Patches the fan-out pool; resolves with its propagation and where its time went before the round was handed out. */
async function patchAndWatch(replicas: number): Promise<[Propagation | undefined, HandOut]> {
  const apiBefore = await apiserverLatencies();
  const before = await controlPlane.driverMetrics();
  const applied = tracker.until(replicas, 30_000);
  const watched = fanoutWatch.next(replicas, 30_000);
  const cpuSent = cpuNow();
  const sent = performance.now();
  const polled =
    POLL_MS === undefined
      ? undefined
      : controlPlane.roundAfter(sum(before.raw, 'warmpool_controlplane_generation'), 30_000, POLL_MS);
  await pools.scale(FANOUT.name, replicas);
  const answered = performance.now() - sent;
  const cpuAnswered = cpuNow();
  const apiAnswered = await apiserverLatencies();
  const seen = await watched;
  const propagation = await applied;
  const polledAt = await polled;
  const after = await controlPlane.driverMetrics();
  const cp = answerBetween(before.raw, after.raw);
  const watchedMs = seen === undefined ? undefined : seen - sent;
  const handOut: HandOut = {
    sentAt: sent,
    answered,
    watched: watchedMs,
    controlPlane: cp,
    handedOut: watchedMs === undefined || cp.handed_out === undefined ? undefined : watchedMs + cp.handed_out,
    polled: polledAt === undefined ? undefined : polledAt - sent,
    runs: after.reconcile.count - before.reconcile.count,
    apiserver: apiBefore && apiAnswered && apiserverBetween(apiBefore, apiAnswered),
    cpu: {
      apiserver: cpuAnswered.apiserver - cpuSent.apiserver,
      etcd: cpuAnswered.etcd - cpuSent.etcd,
      controlPlane: cpuAnswered.controlPlane - cpuSent.controlPlane,
      bench: cpuAnswered.bench - cpuSent.bench,
      machine: cpuAnswered.machine - cpuSent.machine,
    },
  };
  const { cpu, apiserver } = handOut;
  const f = (v: number | undefined): string => (v === undefined ? '—' : v.toFixed(1));
  log(
    `patch → ${replicas}: answered ${f(handOut.answered)} ms, watch ${f(handOut.watched)} ms; control plane event → ` +
      `run start ${f(cp.run_start)}, handed out ${f(cp.handed_out)}, run end ${f(cp.run_end)} ms; ` +
      `patch → handed out ${f(handOut.handedOut)} ms${POLL_MS === undefined ? '' : ` (polled ${f(handOut.polled)} ms)`}; ` +
      `first node ${f(propagation && propagation.first - propagation.since)} ms, ${handOut.runs} runs; ` +
      (apiserver === undefined
        ? ''
        : `apiserver: its own PATCH time ${f(apiserver.patchMs)} ms, ` +
          `${apiserver.writes} writes + ${apiserver.reads} reads served until the answer; `) +
      `CPU ms until the answer: ` +
      `apiserver ${cpu.apiserver}, etcd ${cpu.etcd}, control plane ${cpu.controlPlane}, benchmark (fleet) ${f(cpu.bench)}, ` +
      `whole machine ${cpu.machine} (others ${f(cpu.machine - cpu.apiserver - cpu.etcd - cpu.controlPlane - cpu.bench)})`,
  );
  return [propagation, handOut];
}

/**
 * Starts a 30 s CPU profile of the apiserver and counts its requests from now; the returned call waits for the
 * profile and logs the requests served since, by verb and resource.
 */
async function apiserverFanoutProfile(dir: string): Promise<() => Promise<void>> {
  const before = parseRequests(await fetchMetrics(cluster.server, cluster.adminTls));
  const file = join(dir, 'fanout-30s.pb.gz');
  const profile = profileApiserver(cluster.server, cluster.adminTls, 30, file).then(
    () => log(`apiserver profile of the first 30 s of the fan-outs: go tool pprof -top ${file}`),
    (err: unknown) => log(`apiserver profile failed: ${String(err)}`),
  );
  return async () => {
    await profile;
    const served = new Map<string, number>();
    addDelta(served, before, parseRequests(await fetchMetrics(cluster.server, cluster.adminTls)));
    const top = [...served]
      .sort(([, a], [, b]) => b - a)
      .slice(0, 15)
      .map(([key, n]) => `${key} ${n}`);
    log(`apiserver requests during the fan-outs: ${top.join(', ')}`);
  };
}

async function measure(): Promise<Measured> {
  log(`applying ${POOLS} templates + pools (${desiredTotal} replicas) and the fan-out pool`);
  const applyStarted = performance.now();
  await pools.applyAll([...specs, { name: FANOUT.name, image: FANOUT.image, replicas: FANOUT.low }]);
  const applyMs = performance.now() - applyStarted;
  let progressAt = applyStarted;
  for (;;) {
    const { ready, pools: count } = await allReady(pools);
    if (ready === count && count === POOLS + 1) break;
    if (performance.now() - progressAt >= 10_000) {
      // The fill's progress, and what the fleet's NodeInventory writes carried meanwhile.
      log(
        `fill: ${ready}/${count} pools ready; NodeInventory writes in the last ${seconds(performance.now() - progressAt)}: ${writesLine(inventoryWrites.between(progressAt, performance.now()))}`,
      );
      progressAt = performance.now();
    }
    if (performance.now() - applyStarted > FILL_TIMEOUT_MS)
      throw new Error(
        `only ${ready}/${count} pools READY = DESIRED after ${FILL_TIMEOUT_MS / 1000} s; control plane log:\n${controlPlane.logTail()}`,
      );
    await sleep(500);
  }
  const fillMs = performance.now() - applyStarted;
  log(
    `fill: NodeInventory writes from apply to READY: ${writesLine(inventoryWrites.between(applyStarted, performance.now()))}`,
  );
  log(`every pool READY = DESIRED after ${seconds(fillMs)}; letting it settle for two intervals`);
  await sleep(2 * INTERVAL_S * 1000);

  log(`steady state: measuring for ${STEADY_WINDOW_MS / 1000} s`);
  const writesBefore = await scrapeWrites(cluster.server, cluster.adminTls);
  const steadyBefore = await controlPlane.driverMetrics();
  await sleep(STEADY_WINDOW_MS);
  const writesAfter = await scrapeWrites(cluster.server, cluster.adminTls);
  const steadyAfter = await controlPlane.driverMetrics();
  const steadyMemory = memoryOf(controlPlane.pid);

  log(`fan-out: ${FANOUT_REPEATS} patches of the pool spread over all ${NODES} nodes`);
  // How late the simulated fleet's threads run their callbacks while they serve the fan-out.
  fleet.startLagMonitor();
  const fanouts: Propagation[] = [];
  const fanoutRounds: HandOut[] = [];
  const profiled = apiserverProfDir === undefined ? undefined : await apiserverFanoutProfile(apiserverProfDir);
  for (let i = 0; i < FANOUT_REPEATS; i++) {
    const replicas = i % 2 === 0 ? FANOUT.high : FANOUT.low;
    // Each patch starts on a quiet fleet: the previous one's inventory republishes (debounced 5 s) are over.
    await sleep(FANOUT_QUIET_MS + Math.random() * 2_000);
    const [p, round] = await patchAndWatch(replicas);
    if (p !== undefined) fanouts.push(p);
    fanoutRounds.push(round);
  }
  const hostLag = await fleet.stopLagMonitor();
  await profiled?.();
  const fanoutAfter = await controlPlane.driverMetrics();

  log(`storm: ${STORM_REPEATS} patches sent 5-6 s after the previous fan-out ended, into its inventory republishes`);
  // A node republishes at once when a push's refill moves a warm count to or from 0, or a new term's
  // push lands (debounced 5 s): the NodeInventory writes and watch events a round brings land around then.
  const storms: Propagation[] = [];
  const stormRounds: HandOut[] = [];
  let previousEnd = fanouts.at(-1)?.last ?? performance.now();
  for (let i = 0; i < STORM_REPEATS; i++) {
    const replicas = (FANOUT_REPEATS + i) % 2 === 0 ? FANOUT.high : FANOUT.low;
    await sleep(Math.max(0, previousEnd + 5_000 + Math.random() * 1_000 - performance.now()));
    const [p, round] = await patchAndWatch(replicas);
    if (p !== undefined) storms.push(p);
    stormRounds.push(round);
    previousEnd = p?.last ?? performance.now();
  }
  const end = await controlPlane.driverMetrics();
  const sentTimes = [...fanoutRounds, ...stormRounds].map((r) => r.sentAt);
  const fanoutWrites = fanoutRounds.map((r, i) =>
    inventoryWrites.between(r.sentAt, sentTimes[i + 1] ?? performance.now()),
  );
  fanoutWrites.forEach((w, i) => log(`fan-out ${i + 1}: NodeInventory writes until the next patch: ${writesLine(w)}`));
  return {
    fanoutWrites,
    hostLagMs: { p99: hostLag.p99Ms, max: hostLag.maxMs },
    // prom-client's lag gauges cover the time since the previous scrape: here, the fan-out phase.
    cpLagMaxMs: sum(fanoutAfter.raw, 'nodejs_eventloop_lag_max_seconds') * 1000,
    applyMs,
    fillMs,
    steadyWrites: writesBetween(writesBefore, writesAfter),
    reconcileSteady: histogramDelta(steadyBefore.reconcile, steadyAfter.reconcile),
    setPoolsSteady: histogramDelta(steadyBefore.setPools, steadyAfter.setPools),
    fanouts,
    storms,
    fanoutRounds,
    stormRounds,
    reconcileFanout: histogramDelta(steadyAfter.reconcile, fanoutAfter.reconcile),
    setPoolsFanout: histogramDelta(steadyAfter.setPools, fanoutAfter.setPools),
    reconcileStorm: histogramDelta(fanoutAfter.reconcile, end.reconcile),
    cpLagStormMs: sum(end.raw, 'nodejs_eventloop_lag_max_seconds') * 1000,
    cpMemory: {
      rss: steadyMemory.rss,
      peak: memoryOf(controlPlane.pid).peak,
      heapUsed: sum(steadyAfter.raw, 'nodejs_heap_size_used_bytes'),
      heapTotal: sum(end.raw, 'nodejs_heap_size_total_bytes'),
      external: sum(end.raw, 'nodejs_external_memory_bytes'),
    },
    setPoolsErrors: sum(end.raw, 'warmpool_controlplane_set_pools_total', { outcome: 'error' }),
    stepDowns: controlPlane.logTail(Number.MAX_SAFE_INTEGER).split('"msg":"stepping down"').length - 1,
  };
}

let measured: Measured;
try {
  measured = await measure();
} finally {
  fanoutWatch.close();
  inventoryWrites.close();
  await controlPlane.stop();
  await fleet.close();
  await cluster.stop();
}
const { steadyWrites, cpMemory } = measured;
const meanMs = (h: HistogramSnapshot): number => (h.count > 0 ? (h.sum / h.count) * 1000 : Number.NaN);
const msPair = (values: readonly number[]): string => `${ms(quantile(values, 0.5), 0)} / ${ms(quantile(values, 1), 0)}`;
/** p50 / max of one part of the patches' hand-out, over the patches where it was measured. */
const handOutPair = (rounds: readonly HandOut[], part: (h: HandOut) => number | undefined): string => {
  const values = rounds.map(part).filter((v): v is number => v !== undefined);
  return values.length === 0 ? 'not measured' : `${msPair(values)} (${values.length} of ${rounds.length})`;
};
/** The rows that split patch → round handed out, for the fan-out or the storm patches. */
const handOutRows = (rounds: readonly HandOut[]): Row[] => [
  [
    '  of which patch → control plane hands out the round, p50 / max (watch + control plane)',
    handOutPair(rounds, (h) => h.handedOut),
    'info (issue 21: ≤ 20 ms p50)',
    '',
    '',
  ],
  ['    patch → the apiserver answers the patch', handOutPair(rounds, (h) => h.answered), 'info', '', ''],
  [
    '      of which the apiserver’s own time for it (its request duration)',
    handOutPair(rounds, (h) => h.apiserver?.patchMs),
    'info',
    '',
    '',
  ],
  [
    '      CPU until the answer, p50 ms: apiserver / etcd / control plane / benchmark (fleet) / other processes',
    ['apiserver', 'etcd', 'controlPlane', 'bench']
      .map((k) =>
        ms(
          quantile(
            rounds.map((h) => h.cpu[k as keyof HandOut['cpu']]),
            0.5,
          ),
          0,
        ),
      )
      .join(' / ') +
      ` / ${ms(
        quantile(
          rounds.map((h) => h.cpu.machine - h.cpu.apiserver - h.cpu.etcd - h.cpu.controlPlane - h.cpu.bench),
          0.5,
        ),
        0,
      )}`,
    'info',
    '',
    '',
  ],
  [
    "    patch → the benchmark's watch delivers it (the apiserver's part)",
    handOutPair(rounds, (h) => h.watched),
    'info',
    '',
    '',
  ],
  [
    "    control plane: its informer's event → the run starts",
    handOutPair(rounds, (h) => h.controlPlane.run_start),
    'info',
    '',
    '',
  ],
  [
    '    control plane: event → round handed out',
    handOutPair(rounds, (h) => h.controlPlane.handed_out),
    'info',
    '',
    '',
  ],
  [
    '    control plane: event → run ends (the requests leave)',
    handOutPair(rounds, (h) => h.controlPlane.run_end),
    'info',
    '',
    '',
  ],
  ...(POLL_MS === undefined
    ? []
    : [
        [
          `    patch → a ${POLL_MS} ms /metrics poll sees the generation`,
          handOutPair(rounds, (h) => h.polled),
          'info',
          '',
          '',
        ] satisfies Row,
      ]),
];
/** The fan-out windows' writes by what they carried. */
const sumKinds = (windows: readonly WritesSummary[]): Record<string, number> => {
  const sums: Record<string, number> = {};
  for (const w of windows) for (const [kind, n] of Object.entries(w.byKind)) sums[kind] = (sums[kind] ?? 0) + n;
  return sums;
};
const pick = (f: (p: Propagation) => number, of: readonly Propagation[] = measured.fanouts): string =>
  msPair(of.map(f));

const windowS = STEADY_WINDOW_MS / 1000;
const perInterval = (count: number): number => (count / windowS) * INTERVAL_S;
const totalWrites = total(steadyWrites);
const sandboxWrites = steadyWrites.get('sandboxes') ?? 0;
const budget = POOLS + NODES; // O(pools + nodes) per interval, with constant 1
const byResource = [...steadyWrites.entries()]
  .sort((a, b) => b[1] - a[1])
  .map(([r, n]) => `${r} ${(n / windowS).toFixed(1)}/s`)
  .join(', ');
const bench = memoryOf(process.pid);

printTable(
  `warmpool fleet: ${NODES} nodes × ${POOLS} pools — ${machineNote()}`,
  [
    `${NODES} simulated nodes in one process over ${fleet.threads} worker thread(s) (node agent + fake-sandboxd each on its own loopback port, inventory heartbeat 30 s, debounce 5 s),`,
    `${POOLS} pools (${desiredTotal} warm replicas, 5–400 per pool) + 1 fan-out pool over every node (toggled ${FANOUT.low} ↔ ${FANOUT.high});`,
    `control plane as a process (the chart's V8 flags: ${chartNodeFlags('controlPlane').join(' ')}), --interval ${INTERVAL_S}s, default --set-pools-concurrency; real kube-apiserver v1.37.2 + etcd.`,
    `Steady-state window: ${windowS} s, starting two intervals after every pool was READY = DESIRED. Fleet startup ${seconds(fleet.startupMs)}.`,
    `Fan-out: ${FANOUT_REPEATS} patches ${FANOUT_QUIET_MS / 1000}-${FANOUT_QUIET_MS / 1000 + 2} s apart; clock from the patch request sent to each node's fake-sandboxd setPools (in-process hook);`,
    `then ${STORM_REPEATS} patches each sent 5-6 s after the previous one's last node applied, into the fleet's inventory republish storm.`,
    `apiserver writes by resource (steady): ${byResource || 'none'}`,
  ],
  [
    [
      `apply ${POOLS + 1} templates + pools (server-side apply, 16 at a time)`,
      seconds(measured.applyMs),
      'info',
      '',
      '',
    ],
    ['apply → every pool READY = DESIRED', seconds(measured.fillMs), 'info', '', ''],
    [
      'reconcile at steady state: mean (runs per interval)',
      `${ms(meanMs(measured.reconcileSteady))} (${((measured.reconcileSteady.count / windowS) * INTERVAL_S).toFixed(1)})`,
      'O(pools + nodes)',
      '',
      '',
    ],
    [
      'SetPools calls at steady state',
      String(measured.setPoolsSteady.count),
      '0: pushes only on change',
      'cocoonstack: every node every 5 s',
      pass(measured.setPoolsSteady.count === 0),
    ],
    [
      'apiserver writes/s at steady state (all resources)',
      `${(totalWrites / windowS).toFixed(1)}/s = ${perInterval(totalWrites).toFixed(0)} per ${INTERVAL_S} s`,
      `≤ pools + nodes = ${budget} per interval`,
      '',
      pass(perInterval(totalWrites) <= budget),
    ],
    [
      'apiserver writes to per-sandbox objects (sandboxes)',
      String(sandboxWrites),
      '0',
      'upstream: a Sandbox object per sandbox',
      pass(sandboxWrites === 0),
    ],
    [
      `patch → first node applied, p50 / max (${measured.fanouts.length} patches)`,
      pick((p) => p.first - p.since),
      'info',
      '',
      '',
    ],
    [
      `patch → last of ${NODES} nodes applied, p50 / max`,
      pick((p) => p.last - p.since),
      'info',
      'cocoonstack: the next 5 s push',
      '',
    ],
    [`fan-out: first → last of ${NODES} nodes, p50 / max`, pick((p) => p.last - p.first), 'info', '', ''],
    ...handOutRows(measured.fanoutRounds),
    [
      '  NodeInventory writes per fan-out patch (patch sent → next patch sent), p50 / max',
      `${quantile(
        measured.fanoutWrites.map((w) => w.writes),
        0.5,
      ).toFixed(0)} / ${quantile(
        measured.fanoutWrites.map((w) => w.writes),
        1,
      ).toFixed(0)} (${(
        quantile(
          measured.fanoutWrites.map((w) => w.writes),
          0.5,
        ) / NODES
      ).toFixed(2)} per node)`,
      'info',
      '',
      '',
    ],
    [
      '    what they carried, all fan-out windows (a write may carry several)',
      Object.entries(sumKinds(measured.fanoutWrites))
        .map(([kind, n]) => `${kind} ${n}`)
        .join(', '),
      'info',
      '',
      '',
    ],
    [
      '  during fan-out: SetPools call mean (as the control plane times it)',
      `${ms(meanMs(measured.setPoolsFanout))} × ${measured.setPoolsFanout.count} calls`,
      'info',
      '',
      '',
    ],
    [
      '  during fan-out: reconcile mean (runs)',
      `${ms(meanMs(measured.reconcileFanout))} (${measured.reconcileFanout.count})`,
      'info',
      '',
      '',
    ],
    [
      '  during fan-out: event-loop delay, simulated fleet host (worst thread) p99 / max',
      `${ms(measured.hostLagMs.p99, 0)} / ${ms(measured.hostLagMs.max, 0)}`,
      'info',
      '',
      '',
    ],
    ['  during fan-out: event-loop lag max, control plane', ms(measured.cpLagMaxMs, 0), 'info', '', ''],
    [
      `storm: patch → first node applied, p50 / max (${measured.storms.length} patches)`,
      pick((p) => p.first - p.since, measured.storms),
      'info',
      '',
      '',
    ],
    ...handOutRows(measured.stormRounds),
    [
      `storm: patch → last of ${NODES} nodes applied, p50 / max`,
      pick((p) => p.last - p.since, measured.storms),
      'info',
      '',
      '',
    ],
    [
      '  during the storm patches: reconcile mean (runs) / control-plane event-loop lag max',
      `${ms(meanMs(measured.reconcileStorm))} (${measured.reconcileStorm.count}) / ${ms(measured.cpLagStormMs, 0)}`,
      'info',
      '',
      '',
    ],
    [
      'control-plane RSS at steady state / peak (V8 heap used)',
      `${mib(cpMemory.rss)} / ${mib(cpMemory.peak)} (${mib(cpMemory.heapUsed)})`,
      `≤ ${mib(RSS_GOAL_BYTES)} (chart limit)`,
      '',
      pass(cpMemory.peak <= RSS_GOAL_BYTES),
    ],
    [
      '  control-plane V8 heap total / external memory, at the end',
      `${mib(cpMemory.heapTotal)} / ${mib(cpMemory.external)}`,
      'info',
      '',
      '',
    ],
    [
      `benchmark host (${NODES} agents + fake-sandboxd) RSS / peak`,
      `${mib(bench.rss)} / ${mib(bench.peak)}`,
      'info',
      '',
      '',
    ],
    [
      'control-plane step-downs, whole run (Lease not renewed within the deadline; each new term pushes every node)',
      String(measured.stepDowns),
      '0',
      '',
      pass(measured.stepDowns === 0),
    ],
    [
      'SetPools calls that failed (whole run)',
      String(measured.setPoolsErrors),
      '0',
      '',
      pass(measured.setPoolsErrors === 0),
    ],
  ],
);
process.exit(0);
