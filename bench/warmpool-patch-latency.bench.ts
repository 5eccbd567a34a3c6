// Patch latency: from a replicas patch of a SandboxWarmPool to the last of 100
// nodes having applied its new warm target (the fake-sandboxd core's
// setPools, observed in-process). Real kube-apiserver + etcd, the control
// plane as its own process (with the chart's V8 flags), 100 simulated nodes
// (node agent + fake-sandboxd, each on its own loopback port) hosted in this
// process over FLEET_THREADS worker threads (default 2, one per core: with one
// thread the fan-out measured the simulator's single event loop).
//   make build && node bench/warmpool-patch-latency.bench.ts
// Bounded: 20 patches 1.5-2.5 s apart, each waited for at most 10 s (about a minute in all).
import { randomBytes } from 'node:crypto';
import { sleep, startCluster } from '@warmpool/harness';
import { startControlPlaneProcess } from './lib/control-plane.ts';
import { startThreadedFleet } from './lib/threaded-fleet.ts';
import { Pools } from './lib/pools.ts';
import { histogramDelta } from './lib/prom-text.ts';
import { TargetTracker } from './lib/target-tracker.ts';
import { machineNote, ms, pass, printTable, quantile } from './lib/table.ts';

const NODES = 100;
const THREADS = Number(process.env['FLEET_THREADS'] ?? 2);
const REPEATS = 20;
const GOAL_MS = 100;
const INTERVAL = '5s';
const IMAGE = 'registry.example/bench/patch-latency:1';
const POOL = 'patch-latency';
// 2 ↔ 3 warm per node: every node's target changes on every patch.
const LOW = 2 * NODES;
const HIGH = 3 * NODES;
const PATCH_TIMEOUT_MS = 10_000;

const tracker = new TargetTracker(IMAGE);

const cluster = await startCluster({ name: 'bench-patch-latency' });
const token = randomBytes(24).toString('hex');
const fleet = await startThreadedFleet({
  nodes: NODES,
  threads: THREADS,
  kubeconfigPath: cluster.kubeconfigPath,
  token,
  sandboxd: { refillRate: 500, refillConcurrency: 64, bootMs: 20 },
  agent: { pollIntervalMs: 2_000, minPublishGapMs: 1_000 },
  onSetPools: tracker.onSetPools,
});
const controlPlane = await startControlPlaneProcess({ cluster, token, interval: INTERVAL });
const pools = new Pools(cluster.kubeConfig);

const latencies: number[] = [];
const reactions: number[] = [];
const fanouts: number[] = [];
const patchRoundTrips: number[] = [];
let timeouts = 0;
// How late the simulated fleet's threads run their callbacks while they serve the pushes.
let hostLag: { p99Ms: number; maxMs: number } | undefined;
let setPoolsCalls: { count: number; meanMs: number; hostCpuPerCallMs: number } | undefined;
try {
  const settled = tracker.until(LOW, 60_000);
  await pools.apply({ name: POOL, image: IMAGE, replicas: LOW });
  if ((await settled) === undefined)
    throw new Error(`the first ${LOW} replicas never reached the nodes; control plane log:\n${controlPlane.logTail()}`);

  const before = await controlPlane.driverMetrics();
  const cpuBefore = process.cpuUsage();
  fleet.startLagMonitor();
  for (let i = 0; i < REPEATS; i++) {
    const replicas = i % 2 === 0 ? HIGH : LOW;
    // A random pause, so patches do not phase-lock with the periodic reconcile, and long
    // enough that the previous patch's inventory republishes (debounced 1 s) are over.
    await sleep(1_500 + Math.random() * 1_000);
    const applied = tracker.until(replicas, PATCH_TIMEOUT_MS);
    const sent = performance.now();
    await pools.scale(POOL, replicas);
    patchRoundTrips.push(performance.now() - sent);
    const propagation = await applied;
    if (propagation === undefined) {
      timeouts += 1;
      continue;
    }
    latencies.push(propagation.last - propagation.since);
    reactions.push(propagation.first - propagation.since);
    fanouts.push(propagation.last - propagation.first);
  }
  hostLag = await fleet.stopLagMonitor();
  const calls = histogramDelta(before.setPools, (await controlPlane.driverMetrics()).setPools);
  const cpu = process.cpuUsage(cpuBefore);
  setPoolsCalls = {
    count: calls.count,
    meanMs: calls.count > 0 ? (calls.sum / calls.count) * 1000 : Number.NaN,
    hostCpuPerCallMs: calls.count > 0 ? (cpu.user + cpu.system) / 1000 / calls.count : Number.NaN,
  };
} finally {
  await controlPlane.stop();
  await fleet.close();
  await cluster.stop();
}

const p50 = quantile(latencies, 0.5);
const p99 = quantile(latencies, 0.99);
printTable(
  `warmpool patch → last node applied — ${machineNote()}`,
  [
    `${NODES} simulated nodes (node agent + fake-sandboxd, in one process over ${fleet.threads} worker thread(s)), control plane as a process (--interval ${INTERVAL},`,
    `the chart's V8 flags), real kube-apiserver v1.37.2 + etcd.`,
    `${REPEATS} merge patches of spec.replicas, 1.5-2.5 s apart, alternating ${LOW} ↔ ${HIGH} (every node's target changes); clock starts when the patch request is SENT`,
    "and stops when the last node's fake-sandboxd applied its new target (observed in-process). Fleet startup: " +
      `${(fleet.startupMs / 1000).toFixed(1)} s.`,
  ],
  [
    [
      'patch → last of 100 nodes applied, p50',
      ms(p50),
      `≤ ${GOAL_MS} ms`,
      'cocoonstack T₀ ≈ 5–6 s (push every 5 s)',
      pass(p50 <= GOAL_MS),
    ],
    [
      'patch → last of 100 nodes applied, p99 (max of 20)',
      ms(p99),
      `≤ ${GOAL_MS} ms`,
      'cocoonstack T₀ ≈ 5–6 s',
      pass(p99 <= GOAL_MS),
    ],
    [
      '  of which patch → first node applied, p50 / max',
      `${ms(quantile(reactions, 0.5))} / ${ms(quantile(reactions, 1))}`,
      'info',
      '',
      '',
    ],
    [
      '  of which first → last node (fan-out), p50 / max',
      `${ms(quantile(fanouts, 0.5))} / ${ms(quantile(fanouts, 1))}`,
      'info',
      '',
      '',
    ],
    [
      '  SetPools call mean, as the control plane times it (waiting for a slot included)',
      `${ms(setPoolsCalls?.meanMs ?? Number.NaN)} × ${setPoolsCalls?.count ?? 0} calls`,
      'info',
      '',
      '',
    ],
    [
      '  CPU of the simulated fleet host per SetPools (all its work included: an upper bound)',
      ms(setPoolsCalls?.hostCpuPerCallMs ?? Number.NaN, 2),
      'info',
      '',
      '',
    ],
    [
      '  event-loop delay of the simulated fleet host (worst thread), p99 / max',
      `${ms(hostLag?.p99Ms ?? Number.NaN, 0)} / ${ms(hostLag?.maxMs ?? Number.NaN, 0)}`,
      'info',
      '',
      '',
    ],
    ['patch round trip (apiserver answer), p50', ms(quantile(patchRoundTrips, 0.5)), 'info', '', ''],
    ['patches not applied within 10 s', String(timeouts), '0', '', pass(timeouts === 0)],
  ],
);
process.exit(0);
