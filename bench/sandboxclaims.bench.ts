// SandboxClaim → Ready: from the create request of a SandboxClaim to the
// moment a watch on the apiserver shows it Ready=True, 20 claims at once,
// side by side on the same stack with the HTTP claim API (the same pipeline
// without the apiserver) and direct agent claims (the floor). Real
// kube-apiserver + etcd, real Redis, the control plane as its own process
// (the chart's V8 flags, --redis-url, the claim API), 3 simulated nodes (node
// agent + fake-sandboxd with instant refill, so every claim is a warm hit)
// hosted in this process, which is also the client.
//   make build && node bench/sandboxclaims.bench.ts
// Bounded: ROUNDS rounds of 20 per front door, each waited for at most 15 s (about a minute in all).
// APISERVER_PROF=<dir>: the apiserver serves /debug/pprof, and each measured round's SandboxClaim phase runs inside a
// 1 s CPU profile of it (<dir>/claims-<round>.pb.gz; the rest of the second is idle, so one 5 s profile of the idle
// stack follows the rounds: <dir>/idle-5s.pb.gz), with the apiserver's requests counted over those phases only.
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { claimBodySchema, SandboxClaimType, type SandboxClaim } from '@warmpool/api';
import { sleep, startCluster, startRedis } from '@warmpool/harness';
import { createInformer, ResourceClient } from '@warmpool/kube';
import { fetchMetrics, scrapeWrites, total, writesBetween } from './lib/apiserver-metrics.ts';
import { addDelta, parseLongRunning, parseRequests, parseWatchers, profileApiserver } from './lib/apiserver-pprof.ts';
import { chartNodeFlags } from './lib/chart-flags.ts';
import { startControlPlaneProcess } from './lib/control-plane.ts';
import { fleetTotals, startFleet } from './lib/fleet.ts';
import { Pools } from './lib/pools.ts';
import { cpuMsOf } from './lib/proc.ts';
import { clusterAdminServiceAccount, serviceAccountToken } from './lib/service-account.ts';
import { histogram, histogramDelta, parseSamples, type HistogramSnapshot } from './lib/prom-text.ts';
import { machineNote, ms, pass, printTable, quantile } from './lib/table.ts';
import { UNBOUNDED_SANDBOXD_OPTIONS } from './lib/unbounded-sandboxd.ts';

const NODES = 3;
const CONCURRENT = 20;
const ROUNDS = Number(process.env['ROUNDS'] ?? 25);
const GOAL_P50_MS = 30;
const IMAGE = 'registry.example/bench/sandboxclaims:1';
const POOL = 'bench';
const NAMESPACE = 'default';
const ROUND_TIMEOUT_MS = 15_000;

const apiserverProfDir = process.env['APISERVER_PROF'];
if (apiserverProfDir !== undefined) mkdirSync(apiserverProfDir, { recursive: true });
const cluster = await startCluster({ name: 'bench-sandboxclaims', apiserverProfiling: apiserverProfDir !== undefined });
const redis = await startRedis();
// Who the clients are, as deployed: the control plane authenticates with its ServiceAccount's token (the apiserver
// caches a token's review for 10 s), and so does the bench's client, as a user with a bearer token does. A client
// certificate is verified on every request instead (its chain signature, once per authenticator that reads client
// certificates). BENCH_CLIENT_CERTS=1 runs both with the admin client certificate to see what that costs.
const clientCerts = process.env['BENCH_CLIENT_CERTS'] === '1';
for (const args of [
  ['create', 'serviceaccount', 'bench', '-n', NAMESPACE],
  [
    'create',
    'role',
    'bench-claims',
    '-n',
    NAMESPACE,
    '--verb=create,delete,get,list,watch',
    '--resource=sandboxclaims.extensions.agents.x-k8s.io',
  ],
  [
    'create',
    'rolebinding',
    'bench-claims',
    '-n',
    NAMESPACE,
    '--role=bench-claims',
    `--serviceaccount=${NAMESPACE}:bench`,
  ],
])
  await cluster.kubectl(args);
// The bench's ServiceAccount also holds the apiserver token for the HTTP claim API.
const saToken = await serviceAccountToken(cluster, NAMESPACE, 'bench');
const controlPlaneKubeconfig = join(cluster.dataDir, 'control-plane.kubeconfig');
writeFileSync(
  controlPlaneKubeconfig,
  cluster
    .kubeConfigForToken(await clusterAdminServiceAccount(cluster, NAMESPACE, 'warmpool-control-plane'))
    .exportConfig(),
  {
    mode: 0o600,
  },
);
const clientConfig = clientCerts ? cluster.kubeConfig : cluster.kubeConfigForToken(saToken);
const token = randomBytes(24).toString('hex');
const fleet = await startFleet({
  nodes: NODES,
  kubeConfig: cluster.kubeConfig,
  token,
  sandboxd: UNBOUNDED_SANDBOXD_OPTIONS,
  agent: { pollIntervalMs: 2_000, minPublishGapMs: 1_000 },
});
const claimsPort = 20_000 + Math.floor(Math.random() * 20_000);
// CPU_PROF=<dir>: the control plane writes a V8 CPU profile there when it stops.
const profileDir = process.env['CPU_PROF'];
const controlPlane = await startControlPlaneProcess({
  cluster,
  token,
  interval: '5s',
  ...(clientCerts ? {} : { kubeconfigPath: controlPlaneKubeconfig }),
  ...(profileDir !== undefined
    ? { nodeArgs: [...chartNodeFlags('controlPlane'), '--cpu-prof', `--cpu-prof-dir=${profileDir}`] }
    : {}),
  extraArgs: [`--redis-url=${redis.url}`, `--claims-listen=127.0.0.1:${claimsPort}`],
});
const claimsUrl = `http://127.0.0.1:${claimsPort}/v1/namespaces/${NAMESPACE}/claims`;
const claims = new ResourceClient<SandboxClaim>(clientConfig, SandboxClaimType);
const informer = createInformer<SandboxClaim>(clientConfig, SandboxClaimType, { namespace: NAMESPACE });
const readyAt = new Map<string, (at: number) => void>();
const onChange = (claim: SandboxClaim): void => {
  const ready = claim.status?.conditions?.find((c) => c.type === 'Ready');
  if (ready?.status !== 'True') return;
  const name = claim.metadata.name ?? '';
  readyAt.get(name)?.(performance.now());
  readyAt.delete(name);
};
informer.addEventHandler({ onAdd: onChange, onUpdate: (_, next) => onChange(next) });

async function controllerWrites(): Promise<Map<string, number>> {
  const text = await controlPlane.metrics();
  const out = new Map<string, number>();
  for (const s of parseSamples(text, 'warmpool_controlplane_sandboxclaim_api_writes_total'))
    out.set(s.labels.get('kind') ?? '', s.value);
  return out;
}

/** The controller's (first seen → Ready written) and the pipeline's (claim() of path crd) histograms. */
async function stages(): Promise<{ controller: HistogramSnapshot; pipeline: HistogramSnapshot }> {
  const samples = parseSamples(await controlPlane.metrics(), 'warmpool_controlplane_');
  return {
    controller: histogram(samples, 'warmpool_controlplane_sandboxclaim_ready_seconds'),
    pipeline: histogram(
      samples.filter((s) => s.labels.get('path') === undefined || s.labels.get('path') === 'crd'),
      'warmpool_controlplane_claim_duration_seconds',
    ),
  };
}
const meanMs = (h: HistogramSnapshot | undefined): number =>
  h === undefined || h.count === 0 ? Number.NaN : (h.sum / h.count) * 1000;
let stageDeltas: { controller: HistogramSnapshot; pipeline: HistogramSnapshot } | undefined;
const crd: number[] = [];
const single: number[] = [];
const http: number[] = [];
const direct: number[] = [];
let crdTimeouts = 0;
let httpErrors = 0;
let directErrors = 0;
/** CPU each process used while the measured SandboxClaims went from create to Ready (the round's first phase), ms. */
const crdCpu = { apiserver: 0, etcd: 0, controlPlane: 0, bench: 0, wallMs: 0 };
function cpuNow(): typeof crdCpu {
  const { apiserver, etcd } = cluster.pids();
  const own = process.cpuUsage();
  return {
    apiserver: cpuMsOf(apiserver),
    etcd: cpuMsOf(etcd),
    controlPlane: cpuMsOf(controlPlane.pid),
    bench: (own.user + own.system) / 1000,
    wallMs: performance.now(),
  };
}
let writes: { apiserver: Map<string, number>; controller: Map<string, number>; claims: number } | undefined;
/** With APISERVER_PROF: the apiserver's requests over the measured SandboxClaim phases, and what it held open. */
const phaseRequests = new Map<string, number>();
let openAfterRounds: { longRunning: Map<string, number>; watchers: Map<string, number> } | undefined;
const apiserverMetrics = (): Promise<string> => fetchMetrics(cluster.server, cluster.adminTls);
try {
  await new Pools(cluster.kubeConfig).apply({ name: POOL, image: IMAGE, replicas: 3 * CONCURRENT });
  const deadline = Date.now() + 60_000;
  while (fleetTotals(fleet.nodes, IMAGE).warm < 3 * CONCURRENT) {
    if (Date.now() > deadline) throw new Error(`the pool never filled; control plane log:\n${controlPlane.logTail()}`);
    await sleep(100);
  }
  informer.start();
  await informer.waitForSync();
  // A fresh Redis starts the claim index's recovery (each batch lists every node first): measure the steady state.
  await controlPlane.claimIndexSettled();

  // Warm-up: one round of each, not measured (JIT, connections, the access-review cache).
  const round = async (r: number, measure: boolean): Promise<void> => {
    // SandboxClaims: create 20 at once, each timed to its Ready as a watch sees it.
    const names = Array.from({ length: CONCURRENT }, (_, i) => `r${r}-c${i}`);
    const profiled = measure && apiserverProfDir !== undefined;
    const requestsBefore = profiled ? parseRequests(await apiserverMetrics()) : undefined;
    const profile = profiled
      ? profileApiserver(cluster.server, cluster.adminTls, 1, join(apiserverProfDir, `claims-${r}.pb.gz`))
      : undefined;
    // The profiler starts when the apiserver takes the request: give it that moment before the claims.
    if (profile !== undefined) await sleep(20);
    const cpuBefore = cpuNow();
    const latencies = await Promise.all(
      names.map(async (name) => {
        const ready = new Promise<number>((resolve) => readyAt.set(name, resolve));
        const started = performance.now();
        await claims.create({ metadata: { name, namespace: NAMESPACE }, spec: { warmPoolRef: { name: POOL } } });
        const done = await Promise.race([ready, sleep(ROUND_TIMEOUT_MS).then(() => undefined)]);
        return done === undefined ? undefined : done - started;
      }),
    );
    if (measure) {
      const cpuAfter = cpuNow();
      for (const k of Object.keys(crdCpu) as Array<keyof typeof crdCpu>) crdCpu[k] += cpuAfter[k] - cpuBefore[k];
    }
    if (requestsBefore !== undefined) addDelta(phaseRequests, requestsBefore, parseRequests(await apiserverMetrics()));
    await profile;
    for (const latency of latencies) {
      if (latency === undefined) crdTimeouts += measure ? 1 : 0;
      else if (measure) crd.push(latency);
    }
    await Promise.all(names.map((name) => claims.delete({ namespace: NAMESPACE, name })));
    const gone = Date.now() + ROUND_TIMEOUT_MS;
    while (names.some((name) => informer.lister.get(NAMESPACE, name) !== undefined) && Date.now() < gone)
      await sleep(20);

    // The HTTP claim API: 20 at once, then released.
    const answers = await Promise.all(
      names.map(async () => {
        const started = performance.now();
        const res = await fetch(claimsUrl, {
          method: 'POST',
          headers: { authorization: `Bearer ${saToken}`, 'content-type': 'application/json' },
          body: JSON.stringify({ warmPool: POOL }),
        });
        const body = (await res.json()) as unknown;
        const took = performance.now() - started;
        if (res.status !== 200) return undefined;
        if (measure) http.push(took);
        return claimBodySchema.parse(body).id;
      }),
    );
    httpErrors += measure ? answers.filter((a) => a === undefined).length : 0;
    await Promise.all(
      answers.map(async (id) => {
        if (id === undefined) return;
        const res = await fetch(`${claimsUrl}/${id}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${saToken}` },
        });
        await res.body?.cancel();
      }),
    );

    // Direct agent claims (the floor): 20 at once over the 3 agents, then released.
    const grants = await Promise.all(
      names.map(async (_, i) => {
        const node = fleet.nodes[i % NODES];
        if (node === undefined) return undefined;
        const started = performance.now();
        const res = await fetch(`http://${node.agentAddress}/v1/claim`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ template: IMAGE }),
        });
        const body = (await res.json()) as { id?: string };
        const took = performance.now() - started;
        if (res.status !== 200 || body.id === undefined) return undefined;
        if (measure) direct.push(took);
        return { node, id: body.id };
      }),
    );
    directErrors += measure ? grants.filter((g) => g === undefined).length : 0;
    await Promise.all(
      grants.map(async (grant) => {
        if (grant === undefined) return;
        const res = await fetch(`http://${grant.node.agentAddress}/v1/sandboxes/${grant.id}/release`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}` },
        });
        await res.body?.cancel();
      }),
    );
  };

  // One at a time first: the latency of one SandboxClaim when the apiserver is not busy with the 60 writes of a round.
  for (let i = 0; i <= ROUNDS; i++) {
    const name = `single-${i}`;
    const ready = new Promise<number>((resolve) => readyAt.set(name, resolve));
    const started = performance.now();
    await claims.create({ metadata: { name, namespace: NAMESPACE }, spec: { warmPoolRef: { name: POOL } } });
    const done = await Promise.race([ready, sleep(ROUND_TIMEOUT_MS).then(() => undefined)]);
    if (done === undefined) crdTimeouts += 1;
    else if (i > 0) single.push(done - started);
    await claims.delete({ namespace: NAMESPACE, name });
    while (informer.lister.get(NAMESPACE, name) !== undefined) await sleep(10);
  }

  await round(0, false);
  const apiserverBefore = await scrapeWrites(cluster.server, cluster.adminTls);
  const controllerBefore = await controllerWrites();
  const stagesBefore = await stages();
  for (let r = 1; r <= ROUNDS; r++) {
    await round(r, true);
    await sleep(200);
  }
  const apiserverAfter = await scrapeWrites(cluster.server, cluster.adminTls);
  if (apiserverProfDir !== undefined) {
    const text = await apiserverMetrics();
    openAfterRounds = { longRunning: parseLongRunning(text), watchers: parseWatchers(text) };
    await profileApiserver(cluster.server, cluster.adminTls, 5, join(apiserverProfDir, 'idle-5s.pb.gz'));
  }
  const controllerAfter = await controllerWrites();
  const stagesAfter = await stages();
  stageDeltas = {
    controller: histogramDelta(stagesBefore.controller, stagesAfter.controller),
    pipeline: histogramDelta(stagesBefore.pipeline, stagesAfter.pipeline),
  };
  const controller = new Map<string, number>();
  for (const [kind, value] of controllerAfter) controller.set(kind, value - (controllerBefore.get(kind) ?? 0));
  writes = { apiserver: writesBetween(apiserverBefore, apiserverAfter), controller, claims: ROUNDS * CONCURRENT };
} finally {
  await informer.close();
  await controlPlane.stop();
  await fleet.close();
  await redis.stop();
  await cluster.stop();
}

const per = (n: number | undefined): string =>
  writes === undefined || n === undefined ? 'n/a' : (n / writes.claims).toFixed(2);
const kinds = ['metadata', 'secret', 'status', 'delete'];
const controllerPerClaim = kinds.map((k) => `${k} ${per(writes?.controller.get(k) ?? 0)}`).join(', ');
const controllerTotal = kinds.reduce((sum, k) => sum + (writes?.controller.get(k) ?? 0), 0);
// The writes on the way to Ready; the others come with the delete (the metadata kind only lifts an earlier version's
// finalizer: none here).
const toReady = (writes?.controller.get('secret') ?? 0) + (writes?.controller.get('status') ?? 0);
// The bench's own writes: one create and one delete per SandboxClaim; the HTTP claims write nothing.
const benchOwn = 2 * (writes?.claims ?? 0);
const apiserverTotal = writes === undefined ? Number.NaN : total(writes.apiserver);
const crdP50 = quantile(crd, 0.5);
printTable(
  `SandboxClaim → Ready vs the HTTP claim API vs direct agent claims, ${CONCURRENT} at once — ${machineNote()}`,
  [
    `${NODES} simulated nodes (node agent + fake-sandboxd in this process; instant refill, every claim a warm hit), control plane as a process (--redis-url,`,
    `the claim API, the chart's V8 flags), real kube-apiserver v1.37.2 + etcd, real Redis. ${ROUNDS} SandboxClaims one at a time (after one warm-up), then ${ROUNDS} rounds (after one) of ${CONCURRENT} created at once`,
    '(clock: create request sent → Ready=True seen by a watch in this process), then deleted (the controller releases) before the same',
    `${CONCURRENT} over the HTTP claim API (POST → 200) and ${CONCURRENT} straight to the agents (POST /v1/claim → 200), each released after.`,
    clientCerts
      ? 'The control plane and the SandboxClaim client authenticate with the admin client certificate (BENCH_CLIENT_CERTS=1).'
      : 'The control plane and the SandboxClaim client authenticate with ServiceAccount tokens, as deployed.',
  ],
  [
    [
      `SandboxClaim → Ready p50, ${CONCURRENT} concurrent`,
      ms(crdP50),
      `≤ ${GOAL_P50_MS} ms`,
      'upstream agent-sandbox claim p50 48–54 ms (bare metal)',
      pass(crdP50 <= GOAL_P50_MS),
    ],
    [`SandboxClaim → Ready p99, ${CONCURRENT} concurrent`, ms(quantile(crd, 0.99)), 'info', 'upstream p95 ≈ 70 ms', ''],
    [
      'SandboxClaim → Ready p50 / p99, one at a time',
      `${ms(quantile(single, 0.5))} / ${ms(quantile(single, 0.99))}`,
      'info',
      'upstream p50 48–54 ms',
      '',
    ],
    [
      '  of which the controller: claim seen → Ready written, mean',
      ms(meanMs(stageDeltas?.controller)),
      'info',
      '',
      '',
    ],
    ['  of which the pipeline: claim() of path crd, mean', ms(meanMs(stageDeltas?.pipeline)), 'info', '', ''],
    [
      '  CPU per SandboxClaim, create → Ready: apiserver / etcd / control plane / this process (client + nodes)',
      (['apiserver', 'etcd', 'controlPlane', 'bench'] as const)
        .map((k) => ms(crdCpu[k] / (ROUNDS * CONCURRENT)))
        .join(' / '),
      'info',
      '',
      '',
    ],
    [
      '  CPU busy while 20 SandboxClaims go to Ready, all four processes (cores)',
      ((crdCpu.apiserver + crdCpu.etcd + crdCpu.controlPlane + crdCpu.bench) / crdCpu.wallMs).toFixed(2),
      'info',
      '',
      '',
    ],
    [
      `HTTP claim API p50 / p99, ${CONCURRENT} concurrent (same pipeline, no apiserver)`,
      `${ms(quantile(http, 0.5))} / ${ms(quantile(http, 0.99))}`,
      'info',
      '',
      '',
    ],
    [
      `direct agent claim p50 / p99, ${CONCURRENT} concurrent (the floor)`,
      `${ms(quantile(direct, 0.5))} / ${ms(quantile(direct, 0.99))}`,
      'info',
      '',
      '',
    ],
    [
      'controller apiserver writes per SandboxClaim before Ready (Secret + status)',
      per(toReady),
      '≤ 3',
      '',
      pass(writes !== undefined && toReady <= 3 * writes.claims),
    ],
    [
      'controller apiserver writes per SandboxClaim (claim + delete)',
      `${per(controllerTotal)}: ${controllerPerClaim}`,
      'info',
      '',
      '',
    ],
    [
      "apiserver writes per SandboxClaim, as the apiserver counts them (bench's own create + delete excluded)",
      per(apiserverTotal - benchOwn),
      'info',
      '',
      '',
    ],
    [
      'SandboxClaims not Ready within 15 s / HTTP claims not 200 / direct claims not 200',
      `${crdTimeouts} / ${httpErrors} / ${directErrors}`,
      '0 / 0 / 0',
      '',
      pass(crdTimeouts + httpErrors + directErrors === 0),
    ],
  ],
);
if (writes !== undefined)
  console.log(
    `\napiserver writes in the measured rounds, by resource: ${JSON.stringify(Object.fromEntries(writes.apiserver))}`,
  );
if (apiserverProfDir !== undefined) {
  const claimsMeasured = ROUNDS * CONCURRENT;
  const rows = [...phaseRequests].filter(([, n]) => n > 0).sort(([, a], [, b]) => b - a);
  console.log(
    `\napiserver requests per SandboxClaim over the measured create → Ready phases (the two /metrics reads that bound each phase included):`,
  );
  for (const [key, n] of rows) console.log(`  ${key.padEnd(48)} ${(n / claimsMeasured).toFixed(2)}`);
  console.log(
    `open long-running requests after the rounds: ${JSON.stringify(Object.fromEntries(openAfterRounds?.longRunning ?? []))}`,
  );
  console.log(
    `registered watchers after the rounds: ${JSON.stringify(Object.fromEntries(openAfterRounds?.watchers ?? []))}`,
  );
  console.log(
    `profiles in ${apiserverProfDir}: go tool pprof -top ${apiserverProfDir}/claims-*.pb.gz (the idle stack: idle-5s.pb.gz)`,
  );
}
process.exit(0);
