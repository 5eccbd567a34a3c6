// Claims, side by side in one run: direct agent claims (POST /v1/claim on the
// node agents with the fleet token — the floor: no batching, no Redis, no auth
// review) vs the HTTP claim API of the control plane (TokenReview/SAR cached,
// batch → BullMQ job on Redis → worker → node agent → reply list), at 1, 32
// and 256 claims in flight.
//
// Real kube-apiserver + etcd, real redis-server, the control plane as its own
// process (the chart's V8 flags), 3 nodes (node agent + fake-sandboxd each)
// hosted in one worker thread of this process, the client on the main thread.
// Pools are huge and refill instant (every claim is a warm hit), so the
// difference is the claim path, not the nodes. Paths take turns, round by
// round, so drift on a shared machine hits both.
//   npx tsc -b && node bench/claims.bench.ts
// About 1.5 minutes. Knobs: LEVELS, ROUND_MS, BARE_LEVELS, BARE_CONCURRENCY, BARE_SCRIPTS, BARE_REJOIN_MS (default 5 ms,
// as --claim-batch-rejoin), CLAIM_FLAGS,
// AUTOSCALED=1 (the pool autoscaled, its claims counted for it), CONTROL_PLANE_NODE_FLAGS, BARE_NODE_FLAGS (Node
// flags for the bare design, e.g. the control plane's young generation),
// LOG_DIR=<dir> (the control plane's and the bare design's output kept there, e.g. a --trace-gc-nvp trace for
// `node bench/gc-trace.ts`), CPU_PROF=<dir> (V8 CPU profiles of the control plane and the bare design),
// ALLOC_SITES=<n> (bytes each allocates per claim, and its top n sites), BARE_IN_CONTROL_PLANE=1 (the bare design
// served from inside the control plane's process, so its row carries that process: its heap, Node flags and
// subsystems, without warmpool's claim path). Beside CPU per claim, each level reports what
// the kernel counted for the control plane and the bare design (user and system CPU, read and write system calls and
// the bytes they moved, per claim), and redis-server's CPU, commands and own time per claim by command, for both.
// Each round opens with all its callers asking at once; the p99 of the claims asked after a round's first 0.5 s is
// printed beside the p99, for every path, so the opening burst's share of a tail shows.
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  NodeInventoryType,
  SandboxWarmPoolAutoscalerType,
  WARMPOOL_GROUP,
  WARMPOOL_VERSION,
  type NodeInventory,
  type SandboxWarmPoolAutoscaler,
} from '@warmpool/api';
import { freePort, sleep, startCluster, startRedis } from '@warmpool/harness';
import { ResourceClient } from '@warmpool/kube';
import { Pool } from 'undici';
import { chartNodeFlags, flagsFromEnv } from './lib/chart-flags.ts';
import { drive, merge, OPENING_MS, type PathResult } from './lib/claim-load.ts';
import { addGc, bareBatches, bareGc, gcText, STAGES, type GcTally } from './lib/claim-path-metrics.ts';
import { ClaimRoundMeter } from './lib/claim-round-meter.ts';
import { startControlPlaneProcess } from './lib/control-plane.ts';
import { Pools } from './lib/pools.ts';
import { cpuMsOf, memoryOf } from './lib/proc.ts';
import { countedBy, emptyKernel, kernelText } from './lib/kernel-tally.ts';
import { machineNote, ms, pass, printTable, quantile, type Row } from './lib/table.ts';
import { RedisTally } from './lib/redis-commandstats.ts';
import { startThreadedFleet } from './lib/threaded-fleet.ts';
import { claimantToken } from './lib/claimant.ts';
import { UNBOUNDED_SANDBOXD_OPTIONS } from './lib/unbounded-sandboxd.ts';
import { startProcess, type Server } from './lib/serving-process.ts';
import { PathAllocations } from './lib/path-allocations.ts';

const NODES = 3;
const LEVELS = (process.env['LEVELS'] ?? '1,32,256').split(',').map(Number);
/**
 * The levels at which the claim path's design also runs bare (bench/lib/bare-claim-path.ts: the same batching, job,
 * scripts and agent calls, none of warmpool's code), as the floor of the design on this machine.
 */
const BARE_LEVELS = new Set((process.env['BARE_LEVELS'] ?? LEVELS.join(',')).split(',').filter(Boolean).map(Number));
const ROUNDS = 2;
const ROUND_MS = Number(process.env['ROUND_MS'] ?? 3_000);
const WARM_PER_NODE = 20_000;
const IMAGE = 'registry.example/bench/claims:1';
const POOL = 'claims';
/** Issue 21's goal at 32 in flight: at least half the direct-agent rate measured in the same run, p99 ≤ 50 ms. */
const GOAL_SHARE = 0.5;
const GOAL_P99_MS = 50;

const cluster = await startCluster({ name: 'bench-claims' });
const redis = await startRedis();
const token = randomBytes(24).toString('hex');
const fleet = await startThreadedFleet({
  nodes: NODES,
  threads: 1,
  kubeconfigPath: cluster.kubeconfigPath,
  token,
  sandboxd: UNBOUNDED_SANDBOXD_OPTIONS,
  agent: { pollIntervalMs: 1_000, minPublishGapMs: 1_000 },
});
const claimsPort = await freePort();
// CPU_PROF=<dir>: the control plane writes a V8 CPU profile there when it stops.
const profileDir = process.env['CPU_PROF'];
// CONTROL_PLANE_NODE_FLAGS: Node flags for the control plane after the chart's, e.g. to try a GC setting.
const extraNodeFlags = flagsFromEnv('CONTROL_PLANE_NODE_FLAGS') ?? [];
// ALLOC_SITES=<n>: sample what the control plane and the bare design allocate while their claims run (V8's sampling
// heap profiler over each one's inspector, garbage included), and print bytes per claim and the top n sites of each.
// The sampler costs CPU: read a sampled run's CPU and share figures apart from unsampled ones.
const allocSites = process.env['ALLOC_SITES'] !== undefined ? Number(process.env['ALLOC_SITES']) : undefined;
const cpAllocations = allocSites !== undefined ? await PathAllocations.reserve() : undefined;
const bareInControlPlane = process.env['BARE_IN_CONTROL_PLANE'] === '1' && BARE_LEVELS.size > 0;
// Inside the control plane's process, the bare design's allocations are the control plane's: not sampled apart.
const bareAllocations = allocSites !== undefined && !bareInControlPlane ? await PathAllocations.reserve() : undefined;
const inventories = new ResourceClient<NodeInventory>(cluster.kubeConfig, NodeInventoryType);
// The nodes' agents, as they published themselves (every one has once the fleet has started).
const agents = (await inventories.list()).items.map((i) => i.spec.address);
const BARE_ENTRY = new URL('./lib/bare-claim-path.ts', import.meta.url).pathname;
const bareEnv: Record<string, string> = {
  BARE_REDIS_URL: redis.url,
  BARE_AGENTS: agents.join(','),
  BARE_TOKEN: token,
  BARE_TEMPLATE: IMAGE,
  BARE_CONCURRENCY: process.env['BARE_CONCURRENCY'] ?? '64',
  BARE_SCRIPTS: process.env['BARE_SCRIPTS'] ?? '1',
  BARE_REJOIN_MS: process.env['BARE_REJOIN_MS'] ?? '5',
};
// BARE_IN_CONTROL_PLANE=1: the bare design is imported into the control plane's process before its main (Node's
// --import) and serves on a port of its own there; its rounds then count that process's CPU.
const bareInControlPlanePort = bareInControlPlane ? await freePort() : undefined;
const controlPlane = await startControlPlaneProcess({
  ...(bareInControlPlanePort !== undefined
    ? { env: { ...bareEnv, BARE_IN_PROCESS: '1', BARE_PORT: String(bareInControlPlanePort) } }
    : {}),
  cluster,
  token,
  interval: '5s',
  nodeArgs: [
    ...chartNodeFlags('controlPlane'),
    ...extraNodeFlags,
    ...(profileDir !== undefined ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
    ...(cpAllocations !== undefined ? [cpAllocations.nodeFlag] : []),
    ...(bareInControlPlanePort !== undefined ? ['--import', BARE_ENTRY] : []),
  ],
  // CLAIM_FLAGS: more control-plane flags, e.g. `--claim-batch-max-items=8` to compare batch shapes.
  extraArgs: [
    `--redis-url=${redis.url}`,
    `--claims-listen=127.0.0.1:${claimsPort}`,
    ...(flagsFromEnv('CLAIM_FLAGS') ?? []),
  ],
});
const claimsBase = `http://127.0.0.1:${claimsPort}`;

async function kubectl(args: string[]): Promise<string> {
  const result = await cluster.kubectl(args);
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

/** The design's floor row: the bare path's rate, latency and CPU per claim. */
function bareRow(
  concurrency: number,
  b: PathResult,
  cpu: { bare: number; redis: number },
  batches: number,
  floorRate: number,
): Row {
  const rate = (b.claims / b.elapsedMs) * 1000;
  const perClaim = (ms: number): string => ((ms / Math.max(1, b.claims)) * 1000).toFixed(0);
  return [
    `bare design (the batch hold, a BullMQ job per batch, 2 scripts, a call per node; no warmpool code${bareInControlPlane ? "; served from the control plane's process, whose CPU it counts" : ''}), ${concurrency} in flight`,
    `${rate.toFixed(0)}/s (${((100 * rate) / Math.max(1e-9, floorRate)).toFixed(1)} % of the floor), p50 ${ms(quantile(b.latencies, 0.5), 2)}, p99 ${ms(quantile(b.latencies, 0.99), 2)}${b.errors > 0 ? `, ${b.errors} errors` : ''}; CPU per claim ${perClaim(cpu.bare)} µs, redis-server ${perClaim(cpu.redis)} µs; batches ${batches}, mean size ${(b.claims / Math.max(1, batches)).toFixed(1)}`,
    'floor of the design',
    '',
    '',
  ];
}

/**
 * AUTOSCALED=1: the pool gets a SandboxWarmPoolAutoscaler held at its size (minReplicas = maxReplicas), so every
 * served claim is counted for the demand autoscaler, in Redis, as for an autoscaled pool, and nothing is rescaled.
 */
async function autoscale(pool: string, replicas: number): Promise<void> {
  await new ResourceClient<SandboxWarmPoolAutoscaler>(cluster.kubeConfig, SandboxWarmPoolAutoscalerType).create({
    apiVersion: `${WARMPOOL_GROUP}/${WARMPOOL_VERSION}`,
    kind: 'SandboxWarmPoolAutoscaler',
    metadata: { namespace: 'default', name: pool },
    spec: { scaleTargetRef: { kind: 'SandboxWarmPool', name: pool }, minReplicas: replicas, maxReplicas: replicas },
  });
}

let bare: Server | undefined;
try {
  await new Pools(cluster.kubeConfig).apply({ name: POOL, image: IMAGE, replicas: NODES * WARM_PER_NODE });
  if (process.env['AUTOSCALED'] === '1') await autoscale(POOL, NODES * WARM_PER_NODE);
  const userToken = await claimantToken(kubectl);

  // Wait for the pools to fill and the claim API to answer.
  for (;;) {
    const list = await inventories.list();
    const warm = list.items.map((i) => i.status?.pools?.find((p) => p.template === IMAGE)?.warm ?? 0);
    if (warm.length === NODES && warm.every((w) => w >= WARM_PER_NODE / 2)) break;
    await sleep(500);
  }
  const claimsPool = new Pool(claimsBase, { connections: 256, pipelining: 1 });
  bare =
    BARE_LEVELS.size === 0
      ? undefined
      : bareInControlPlanePort !== undefined
        ? {
            base: `http://127.0.0.1:${bareInControlPlanePort}`,
            pid: controlPlane.pid,
            logFile: controlPlane.logFile,
            stop: () => Promise.resolve(null), // stopped with the control plane
          }
        : await startProcess(
            [
              ...(profileDir !== undefined
                ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, '--cpu-prof-name=bare-claim-path.cpuprofile']
                : []),
              ...(bareAllocations !== undefined ? [bareAllocations.nodeFlag] : []),
              ...(flagsFromEnv('BARE_NODE_FLAGS') ?? []),
              BARE_ENTRY,
            ],
            bareEnv,
            'bare claim path serving',
            (record) => `http://${record['address'] ?? ''}`,
          );
  const barePool = bare !== undefined ? new Pool(bare.base, { connections: 256, pipelining: 1 }) : undefined;
  const agentPools = agents.map((address) => new Pool(`http://${address}`, { connections: 128, pipelining: 1 }));
  for (;;) {
    const res = await claimsPool.request({
      method: 'POST',
      path: '/v1/namespaces/default/claims',
      body: JSON.stringify({ warmPool: POOL }),
      headers: { authorization: `Bearer ${userToken}`, 'content-type': 'application/json' },
    });
    await res.body.text();
    if (res.statusCode === 200) break;
    await sleep(200);
  }
  // A fresh Redis starts the claim index's recovery (each batch lists every node first): measure the steady state.
  await controlPlane.claimIndexSettled();

  const directBody = JSON.stringify({ template: IMAGE, ttl_seconds: 3_600 });
  const httpBody = JSON.stringify({ warmPool: POOL, ttlSeconds: 3_600 });
  const rows: Row[] = [];
  const notes: string[] = [];
  for (const concurrency of LEVELS) {
    const direct: PathResult[] = [];
    const bareRuns: PathResult[] = [];
    const bareCpuMs = { bare: 0, redis: 0 };
    const bareRedis = new RedisTally(redis.target);
    const bareGcTally: GcTally = { count: 0, ms: 0, over10ms: 0 };
    let bareBatchCount = 0;
    const bareKernel = emptyKernel();
    const http: PathResult[] = [];
    const meter = new ClaimRoundMeter({
      controlPlane,
      redis,
      apiserver: { server: cluster.server, tls: cluster.adminTls },
    });
    for (let round = 0; round < ROUNDS; round++) {
      // Direct: the same number in flight, split over the agents (at 1 in flight, the first agent only).
      const shares = agentPools.map((_, a) => Math.floor(concurrency / NODES) + (a < concurrency % NODES ? 1 : 0));
      const perAgent = await Promise.all(
        agentPools.flatMap((pool, a) =>
          (shares[a] ?? 0) > 0
            ? [
                drive(pool, shares[a] ?? 0, ROUND_MS, () => ({
                  path: '/v1/claim',
                  body: directBody,
                  authorization: `Bearer ${token}`,
                })),
              ]
            : [],
        ),
      );
      direct.push({ ...merge(perAgent), elapsedMs: Math.max(...perAgent.map((r) => r.elapsedMs)) });
      if (bare !== undefined && barePool !== undefined && BARE_LEVELS.has(concurrency)) {
        const barePid = bare.pid;
        const bareCpuBefore = { bare: cpuMsOf(barePid), redis: cpuMsOf(redis.pid) };
        const gcBefore = await bareGc(bare.base);
        const batchesBefore = await bareBatches(bare.base);
        const turn = (): Promise<PathResult> =>
          drive(barePool, concurrency, ROUND_MS, () => ({ path: '/', body: httpBody, authorization: '' }));
        bareRuns.push(
          await bareRedis.around(() => countedBy(barePid, bareKernel, () => bareAllocations?.sample(turn) ?? turn())),
        );
        bareCpuMs.bare += cpuMsOf(barePid) - bareCpuBefore.bare;
        bareCpuMs.redis += cpuMsOf(redis.pid) - bareCpuBefore.redis;
        addGc(bareGcTally, gcBefore, await bareGc(bare.base));
        bareBatchCount += (await bareBatches(bare.base)) - batchesBefore;
      }
      // The HTTP claim API, with what the control plane, the apiserver and Redis counted meanwhile.
      const turn = (): Promise<PathResult> =>
        drive(claimsPool, concurrency, ROUND_MS, () => ({
          path: '/v1/namespaces/default/claims',
          body: httpBody,
          authorization: `Bearer ${userToken}`,
        }));
      http.push(await meter.round(() => cpAllocations?.sample(turn) ?? turn()));
    }
    const { batches, stages, gc: httpGc, cpu, kernel: httpKernel, calls, writes } = meter;
    const d = merge(direct);
    const h = merge(http);
    // The bare design's rounds as one, when it ran at this level.
    const b = bareRuns.length > 0 ? merge(bareRuns) : undefined;
    const rate = (r: PathResult): number => (r.claims / r.elapsedMs) * 1000;
    const goal = concurrency === 32;
    rows.push(
      [
        `direct agent claims, ${concurrency} in flight`,
        `${rate(d).toFixed(0)}/s, p50 ${ms(quantile(d.latencies, 0.5), 2)}, p99 ${ms(quantile(d.latencies, 0.99), 2)}${d.errors > 0 ? `, ${d.errors} errors` : ''}`,
        'floor',
        '',
        '',
      ],
      ...(b !== undefined ? [bareRow(concurrency, b, bareCpuMs, bareBatchCount, rate(d))] : []),
      [
        `HTTP claim API, ${concurrency} in flight`,
        `${rate(h).toFixed(0)}/s (${((100 * rate(h)) / Math.max(1e-9, rate(d))).toFixed(1)} % of the floor), p50 ${ms(quantile(h.latencies, 0.5), 2)}, p99 ${ms(quantile(h.latencies, 0.99), 2)}${h.errors > 0 ? `, ${h.errors} errors` : ''}; batches ${batches.count}, mean size ${(batches.sum / Math.max(1, batches.count)).toFixed(1)}`,
        goal ? `≥ ${GOAL_SHARE * 100} % of the floor, p99 ≤ ${GOAL_P99_MS} ms` : '',
        'upstream claim p50 48–54 ms, p95 ≈ 70 ms; roadmap 1 000+/s',
        goal ? pass(rate(h) >= GOAL_SHARE * rate(d) && quantile(h.latencies, 0.99) <= GOAL_P99_MS) : '',
      ],
      [
        `p99 of the claims asked after a round's first ${OPENING_MS / 1000} s (its opening burst left out), ${concurrency} in flight: direct${b !== undefined ? ' / bare design' : ''} / HTTP claim API`,
        [d, ...(b !== undefined ? [b] : []), h].map((r) => ms(quantile(r.afterOpening, 0.99), 2)).join(' / '),
        '',
        '',
        '',
      ],
      [
        `claim stages on the worker (mean), ${concurrency} in flight`,
        STAGES.map((stage) => {
          const tally = stages.get(stage) ?? { count: 0, sum: 0 };
          return `${stage} ${ms((1000 * tally.sum) / Math.max(1, tally.count), 3)} (×${tally.count})`;
        }).join(', '),
        '',
        '',
        '',
      ],
      [
        `GC pauses while the claims ran, ${concurrency} in flight: control plane${b !== undefined ? ' / bare design' : ''}`,
        `${gcText(httpGc, h.claims)}${b !== undefined ? ` / ${gcText(bareGcTally, b.claims)}` : ''}`,
        '',
        '',
        '',
      ],
      [
        `CPU per HTTP claim, ${concurrency} in flight`,
        `control plane ${((cpu.controlPlane / Math.max(1, h.claims)) * 1000).toFixed(0)} µs, redis-server ${((cpu.redis / Math.max(1, h.claims)) * 1000).toFixed(0)} µs`,
        '',
        '',
        '',
      ],
      [
        `the kernel's count per claim, ${concurrency} in flight: control plane${b !== undefined ? ' / bare design' : ''}`,
        `${kernelText(httpKernel, h.claims)}${b !== undefined ? ` / ${kernelText(bareKernel, b.claims)}` : ''}`,
        '',
        '',
        '',
      ],
      [
        `Redis commands per HTTP claim, ${concurrency} in flight`,
        `${(calls.total / Math.max(1, h.claims)).toFixed(2)}, of which scripts ${(calls.scripts / Math.max(1, h.claims)).toFixed(2)} (last round: ${calls.top})`,
        '',
        '',
        '',
      ],
      [
        `Redis's own time per HTTP claim by command (µs; a script's includes what it ran), ${concurrency} in flight`,
        `last round: ${calls.topUsec}`,
        '',
        '',
        '',
      ],
      ...(b !== undefined
        ? [
            [
              `Redis per bare-design claim, ${concurrency} in flight`,
              `${(bareRedis.total / Math.max(1, b.claims)).toFixed(2)} commands (last round: ${bareRedis.top}); own time, last round: ${bareRedis.topUsec} µs`,
              '',
              '',
              '',
            ] as Row,
          ]
        : []),
      [
        `apiserver writes per HTTP claim, ${concurrency} in flight`,
        `${writes.claimKinds} claim/sandbox/secret writes; ${writes.total} writes of any kind over ${h.claims} claims (last round: ${writes.byResource})`,
        '0',
        '',
        pass(writes.claimKinds === 0 && writes.total < h.claims / 10),
      ],
    );
  }
  const memory = memoryOf(controlPlane.pid);
  const rss = { now: memory.rss / 2 ** 20, peak: memory.peak / 2 ** 20 };
  rows.push([
    `control-plane RSS at the end / peak (chart V8 flags${extraNodeFlags.length > 0 ? ` + ${extraNodeFlags.join(' ')}` : ''})`,
    `${rss.now.toFixed(0)} / ${rss.peak.toFixed(0)} MiB`,
    '≤ 512 MiB (chart limit)',
    '',
    pass(rss.peak <= 512),
  ]);
  notes.push(
    machineNote(),
    `${NODES} nodes (agent + fake-sandboxd in one worker thread), control plane process with --redis-url, redis-server, ${ROUNDS} rounds × ${ROUND_MS} ms per path and level; every claim a warm hit, none released.`,
  );
  notes.push(
    'Apiserver writes count everything written while the HTTP claims ran: leader lease renewals, agents republishing NodeInventory, pool status, and the cached TokenReview/SubjectAccessReview (created, never stored, at most one per token and verb per 10 s); none is per claim.',
  );
  const bareSampled = bareAllocations !== undefined && BARE_LEVELS.size > 0;
  if (cpAllocations !== undefined)
    rows.push([
      // Each over the levels it ran at: with BARE_LEVELS narrower than LEVELS, over different levels.
      `bytes allocated per claim (sampled): control plane at ${LEVELS.join(', ')} in flight${bareSampled ? ` / bare design at ${[...BARE_LEVELS].join(', ')}` : ''}`,
      `${cpAllocations.perClaimKiB().toFixed(1)} KiB${bareSampled ? ` / ${bareAllocations.perClaimKiB().toFixed(1)} KiB` : ''}`,
      '',
      '',
      '',
    ]);
  printTable('## Claims: direct agent (floor) vs the HTTP claim API', notes, rows);
  for (const [name, allocations] of [
    ['control plane', cpAllocations],
    ['bare design', BARE_LEVELS.size > 0 ? bareAllocations : undefined],
  ] as const) {
    if (allocations === undefined) continue;
    console.log(`\n${name}, top allocation sites (bytes per claim, site < caller):`);
    for (const line of allocations.topSites(allocSites ?? 0)) console.log(line);
    console.log(`\n${name}, bytes per claim by the innermost frame of our own code that allocated them:`);
    for (const line of allocations.topSites(allocSites ?? 0, 'byOwnFrame')) console.log(line);
  }
  await claimsPool.close();
  await barePool?.close();
  await Promise.all(agentPools.map((p) => p.close()));
} finally {
  cpAllocations?.close();
  bareAllocations?.close();
  keepLogs(process.env['LOG_DIR']);
  await bare?.stop();
  await controlPlane.stop();
  await fleet.close();
  await redis.stop();
  await cluster.stop();
}

/**
 * LOG_DIR: the control plane's and the bare design's output, copied out before their directories go. Runs in the
 * teardown, so a copy that fails is reported and never stops the processes after it from being stopped.
 */
function keepLogs(dir: string | undefined): void {
  if (dir === undefined || dir === '') return;
  try {
    mkdirSync(dir, { recursive: true });
    copyFileSync(controlPlane.logFile, join(dir, 'control-plane.log'));
    const bareLog = bare !== undefined && !bareInControlPlane ? bare.logFile : undefined;
    if (bareLog !== undefined) copyFileSync(bareLog, join(dir, 'bare-design.log'));
    console.log(`\nlogs kept in ${dir}: control-plane.log${bareLog !== undefined ? ', bare-design.log' : ''}`);
  } catch (err) {
    console.error(`LOG_DIR: the logs could not be kept in ${dir}: ${String(err)}`);
  }
}
