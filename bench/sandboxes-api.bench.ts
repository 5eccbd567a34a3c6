// The Sandbox API (agents.x-k8s.io/v1beta1 through the aggregation layer),
// measured through the real kube-apiserver: how many sandboxes it serves per
// etcd object, get and list -A latency, and how soon a claim is visible after
// its answer. Plus the in-memory get (the view's owning-node index) at
// 200 nodes × 2 000 sandboxes.
//
// Real kube-apiserver + etcd, real redis-server, the control plane as its own
// process (chart V8 flags, --redis-url, --claims-listen, --aggregated-listen
// with a CA-signed certificate, registered as the APIService
// v1beta1.agents.x-k8s.io behind an ExternalName Service), 6 nodes (node
// agent + fake-sandboxd each) in one worker thread of this process. Claims go
// through the HTTP claim API; reads go to the apiserver with the admin client
// certificate (what kubectl sends, minus kubectl's own start-up).
//   npx tsc -b && node bench/sandboxes-api.bench.ts
// About 2 minutes.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { join } from 'node:path';
import { NodeInventoryType, SandboxType, type NodeInventory } from '@warmpool/api';
import { SandboxReader, SandboxView, type SandboxFacts } from '@warmpool/control-plane';
import {
  etcdKeyCount,
  freePort,
  issueCertificate,
  registerAggregatedApi,
  sleep,
  startCluster,
  startRedis,
} from '@warmpool/harness';
import { ResourceClient } from '@warmpool/kube';
// undici's own fetch: the global one cannot take this undici's Agent as its dispatcher.
import { Agent, fetch, Pool } from 'undici';
import { startControlPlaneProcess } from './lib/control-plane.ts';
import { Pools } from './lib/pools.ts';
import { machineNote, ms, pass, printTable, quantile, type Row } from './lib/table.ts';
import { startThreadedFleet } from './lib/threaded-fleet.ts';
import { claimantToken } from './lib/claimant.ts';
import { UNBOUNDED_SANDBOXD_OPTIONS } from './lib/unbounded-sandboxd.ts';

const NODES = 6;
const ANCHOR_SANDBOXES = 3_000;
const LIST_SANDBOXES = Number(process.env['LIST_SANDBOXES'] ?? 10_000);
const LAG_CLAIMS = 200;
const READS = 20;
const IMAGE = 'registry.example/bench/sandbox-api:1';
const POOL = 'sandboxes';
const WARM_PER_NODE = Math.ceil((LIST_SANDBOXES + LAG_CLAIMS) / NODES) + 500;

// ---- in memory: get at 200 nodes × 2 000 sandboxes (no apiserver) ----------
function inMemoryGet(nodes: number, sandboxes: number): { viewNs: number } {
  const view = new SandboxView();
  const deadline = new Date(Date.now() + 3_600_000).toISOString();
  const perNode = Math.ceil(sandboxes / nodes);
  for (let n = 0; n < nodes; n++) {
    const entries: SandboxFacts[] = [];
    for (let i = 0; i < perNode && n * perNode + i < sandboxes; i++) {
      const k = n * perNode + i;
      entries.push({
        namespace: `ns-${k % 10}`,
        name: `sb-${k}`,
        id: `sb_${k}`,
        node: `node-${n}`,
        deadline,
        pool: 'python',
        key: { template: IMAGE, net: 'none', size: 'small' },
      });
    }
    view.applyNode(`node-${n}`, { publishedAtMs: Date.now(), partial: false, entries });
  }
  const names = Array.from({ length: 4_096 }, (_, i) => {
    const k = (i * 7919) % sandboxes;
    return [`ns-${k % 10}`, `sb-${k}`] as const;
  });
  const iterations = 200_000;
  let found = 0;
  const t0 = performance.now();
  for (let i = 0; i < iterations; i++) {
    const [namespace, name] = names[i & 4_095] ?? ['', ''];
    if (view.get(namespace, name) !== undefined) found++;
  }
  const viewNs = ((performance.now() - t0) * 1e6) / iterations;
  if (found !== iterations) throw new Error(`in-memory get found ${found} of ${iterations}`);
  return { viewNs };
}

async function readerGetNs(nodes: number, sandboxes: number): Promise<number> {
  const view = new SandboxView();
  const deadline = new Date(Date.now() + 3_600_000).toISOString();
  const perNode = Math.ceil(sandboxes / nodes);
  for (let n = 0; n < nodes; n++) {
    const entries: SandboxFacts[] = [];
    for (let i = 0; i < perNode; i++)
      entries.push({ namespace: 'ns', name: `sb-${n}-${i}`, id: `sb_${n}_${i}`, node: `node-${n}`, deadline });
    view.applyNode(`node-${n}`, { publishedAtMs: Date.now(), partial: false, entries });
  }
  const reader = new SandboxReader({ view });
  const iterations = 50_000;
  const t0 = performance.now();
  for (let i = 0; i < iterations; i++) await reader.get('ns', `sb-${i % nodes}-${i % perNode}`);
  return ((performance.now() - t0) * 1e6) / iterations;
}

/** Heap the view takes per sandbox at `count` over `nodes` (facts kept, objects built when served). */
function heapPerSandbox(nodes: number, count: number): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  const before = process.memoryUsage().heapUsed;
  const view = new SandboxView();
  const deadline = new Date(Date.now() + 3_600_000).toISOString();
  const claimedAt = new Date().toISOString();
  for (let n = 0; n < nodes; n++) {
    const entries: SandboxFacts[] = [];
    for (let i = 0; i < count / nodes; i++) {
      entries.push({
        namespace: `ns-${i % 20}`,
        name: `sb-${n}-${i}`,
        id: `sb_${n}_${i}`,
        node: `node-${n}`,
        deadline,
        pool: 'python',
        tier: 'warm',
        ownerAddr: '10.0.0.1:9000',
        claimedAt,
        key: { template: IMAGE, net: 'none', size: 'small' },
      });
    }
    view.applyNode(`node-${n}`, { publishedAtMs: Date.now(), partial: false, entries });
  }
  gc();
  const bytes = (process.memoryUsage().heapUsed - before) / view.size;
  if (view.size !== count) throw new Error(`the view holds ${view.size} of ${count}`);
  return bytes;
}

const memory = inMemoryGet(200, 2_000);
const heapBytes = heapPerSandbox(400, 100_000);
const readerNs = await readerGetNs(200, 2_000);

// ---- through the apiserver ----------------------------------------------
const dir = mkdtempSync(join(tmpdir(), 'warmpool-bench-sandbox-api-'));
const cluster = await startCluster({ name: 'bench-sandbox-api' });
const redis = await startRedis();
const token = randomBytes(24).toString('hex');
const ca = issueCertificate({ subject: { commonName: 'bench-sandbox-api-ca' }, isCa: true });
const serving = issueCertificate({
  subject: { commonName: 'sandbox-api' },
  issuer: ca,
  usages: ['server'],
  dnsNames: ['v1beta1-agents-x-k8s-io.kube-system.svc', 'localhost'],
  ipAddresses: ['127.0.0.1'],
});
writeFileSync(join(dir, 'tls.crt'), serving.certPem);
writeFileSync(join(dir, 'tls.key'), serving.keyPem);
const fleet = await startThreadedFleet({
  nodes: NODES,
  threads: 1,
  kubeconfigPath: cluster.kubeconfigPath,
  token,
  sandboxd: UNBOUNDED_SANDBOXD_OPTIONS,
  agent: { pollIntervalMs: 1_000, minPublishGapMs: 1_000 },
});
const claimsPort = await freePort();
const apiPort = await freePort();
const controlPlane = await startControlPlaneProcess({
  cluster,
  token,
  interval: '5s',
  extraArgs: [
    `--redis-url=${redis.url}`,
    `--claims-listen=127.0.0.1:${claimsPort}`,
    `--aggregated-listen=127.0.0.1:${apiPort}`,
    `--aggregated-tls-cert-file=${join(dir, 'tls.crt')}`,
    `--aggregated-tls-key-file=${join(dir, 'tls.key')}`,
  ],
});
const claimsPool = new Pool(`http://127.0.0.1:${claimsPort}`, { connections: 64, pipelining: 1 });
const admin = new Agent({
  connect: { ca: cluster.pki.ca.certPem, cert: cluster.pki.admin.certPem, key: cluster.pki.admin.keyPem },
  connections: 16,
});
const direct = new Agent({
  connect: {
    ca: ca.certPem,
    cert: cluster.pki.frontProxyClient.certPem,
    key: cluster.pki.frontProxyClient.keyPem,
    servername: 'localhost',
  },
  connections: 4,
});
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';

async function kubectl(args: string[]): Promise<string> {
  const result = await cluster.kubectl(args);
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

async function read(
  base: string,
  dispatcher: Agent,
  path: string,
  accept = 'application/json',
  headers: Record<string, string> = {},
): Promise<{ status: number; ms: number; bytes: number; body: string }> {
  const t0 = performance.now();
  const res = await fetch(`${base}${path}`, { dispatcher, headers: { accept, ...headers } });
  const body = await res.text();
  return { status: res.status, ms: performance.now() - t0, bytes: body.length, body };
}
const viaApiserver = (path: string, accept?: string): ReturnType<typeof read> =>
  read(cluster.server, admin, path, accept);
const viaDirect = (path: string, accept?: string): ReturnType<typeof read> =>
  read(`https://127.0.0.1:${apiPort}`, direct, path, accept, {
    'x-remote-user': 'bench',
    'x-remote-group': 'system:masters',
  });

async function claim(claimRef: string): Promise<boolean> {
  const res = await claimsPool.request({
    method: 'POST',
    path: '/v1/namespaces/default/claims',
    body: JSON.stringify({ warmPool: POOL, claimRef, ttlSeconds: 3_600 }),
    headers: { authorization: `Bearer ${userToken}`, 'content-type': 'application/json' },
  });
  await res.body.text();
  return res.statusCode === 200;
}

async function claimMany(prefix: string, count: number, concurrency = 32): Promise<number> {
  let next = 0;
  let ok = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        if (await claim(`${prefix}-${i}`)) ok++;
      }
    }),
  );
  return ok;
}

const countItems = (body: string): number =>
  (JSON.parse(body) as { items?: unknown[]; rows?: unknown[] }).items?.length ??
  (JSON.parse(body) as { rows?: unknown[] }).rows?.length ??
  0;

let userToken = '';
try {
  await registerAggregatedApi(cluster, {
    group: SandboxType.group,
    version: SandboxType.version,
    port: apiPort,
    caPem: ca.certPem,
    replacesCrd: `${SandboxType.plural}.${SandboxType.group}`,
  });
  await new Pools(cluster.kubeConfig).apply({ name: POOL, image: IMAGE, replicas: NODES * WARM_PER_NODE });
  userToken = await claimantToken(kubectl);
  const inventories = new ResourceClient<NodeInventory>(cluster.kubeConfig, NodeInventoryType);
  for (;;) {
    const warm = (await inventories.list()).items.map(
      (i) => i.status?.pools?.find((p) => p.template === IMAGE)?.warm ?? 0,
    );
    if (warm.length === NODES && warm.every((w) => w >= WARM_PER_NODE / 2)) break;
    await sleep(500);
  }
  for (;;) {
    if (await claim('warm-up')) break;
    await sleep(200);
  }

  // Read-after-claim: a watch through the apiserver is open; each claim is then read with get at once.
  const watchStarted = performance.now();
  const seenAt = new Map<string, number>();
  const watchAbort = new AbortController();
  const watching = (async () => {
    const res = await fetch(`${cluster.server}/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes?watch=true`, {
      dispatcher: admin,
      signal: watchAbort.signal,
    });
    const reader = res.body?.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const chunk = await reader?.read();
      if (chunk === undefined || chunk.done) return;
      buffer += decoder.decode(chunk.value, { stream: true });
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        const event = JSON.parse(line) as { type: string; object: { metadata?: { name?: string } } };
        const name = event.object.metadata?.name;
        if (event.type === 'ADDED' && name !== undefined && !seenAt.has(name)) seenAt.set(name, performance.now());
      }
    }
  })().catch(() => undefined);
  await sleep(500 + Math.max(0, 1_000 - (performance.now() - watchStarted)));
  const answeredAt = new Map<string, number>();
  const getLatencies: number[] = [];
  let visibleAtOnce = 0;
  for (let i = 0; i < LAG_CLAIMS; i++) {
    const name = `lag-${i}`;
    if (!(await claim(name))) continue;
    answeredAt.set(name, performance.now());
    const got = await viaApiserver(`/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes/${name}`);
    getLatencies.push(got.ms);
    if (got.status === 200) visibleAtOnce++;
  }
  await sleep(2_000);
  watchAbort.abort();
  await watching;
  const watchLags = [...answeredAt].map(([name, at]) => (seenAt.get(name) ?? Number.NaN) - at).filter(Number.isFinite);

  // Served per etcd object: claims up to the anchor's 3 000, then up to LIST_SANDBOXES for list -A.
  await claimMany('anchor', ANCHOR_SANDBOXES - LAG_CLAIMS - 1);
  await sleep(3_000); // every node publishes its entries (1 s interval) and the claim events are read
  const servedAtAnchor = countItems((await viaApiserver('/apis/agents.x-k8s.io/v1beta1/sandboxes')).body);
  const etcdObjects =
    (await etcdKeyCount(cluster, '/registry/warmpool.dev/')) +
    (await etcdKeyCount(cluster, '/registry/extensions.agents.x-k8s.io/'));
  const etcdSandboxes = await etcdKeyCount(cluster, '/registry/agents.x-k8s.io/');
  await claimMany('list', LIST_SANDBOXES - ANCHOR_SANDBOXES);
  await sleep(3_000);
  const listJson: number[] = [];
  const listTable: number[] = [];
  const listDirect: number[] = [];
  let listed = 0;
  let listBytes = 0;
  for (let r = 0; r < READS; r++) {
    const json = await viaApiserver('/apis/agents.x-k8s.io/v1beta1/sandboxes');
    listJson.push(json.ms);
    listed = countItems(json.body);
    listBytes = json.bytes;
    listTable.push((await viaApiserver('/apis/agents.x-k8s.io/v1beta1/sandboxes', TABLE)).ms);
    listDirect.push((await viaDirect('/apis/agents.x-k8s.io/v1beta1/sandboxes')).ms);
  }
  const kubectlRuns: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t0 = performance.now();
    await kubectl(['get', 'sandboxes', '-A', '--no-headers']);
    kubectlRuns.push(performance.now() - t0);
  }
  const getsApiserver: number[] = [];
  const getsDirect: number[] = [];
  for (let r = 0; r < 200; r++) {
    getsApiserver.push((await viaApiserver(`/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes/list-${r}`)).ms);
    getsDirect.push((await viaDirect(`/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes/list-${r}`)).ms);
  }

  const rows: Row[] = [
    [
      'sandboxes served per etcd object',
      `${(servedAtAnchor / etcdObjects).toFixed(0)} (${servedAtAnchor} sandboxes from ${etcdObjects} etcd objects: ${NODES} NodeInventories, 1 pool, 1 template; ${etcdSandboxes} Sandbox objects in etcd); ${(listed / etcdObjects).toFixed(0)} at ${listed}`,
      '',
      '375 (3 000 from 8)',
      pass(servedAtAnchor / etcdObjects >= 375 && etcdSandboxes === 0),
    ],
    [
      'get in memory, 200 nodes × 2 000 sandboxes (view lookup, object not built)',
      `${(memory.viewNs / 1000).toFixed(2)} µs; through SandboxReader ${(readerNs / 1000).toFixed(2)} µs`,
      '',
      '39 µs',
      pass(memory.viewNs / 1000 <= 39),
    ],
    [
      'heap per sandbox in the view, 100 000 over 400 nodes (last 10 000 changes kept)',
      `${(heapBytes / 1024).toFixed(2)} KiB`,
      '',
      '',
      '',
    ],
    [
      'get through the apiserver (TLS, front proxy, cached review)',
      `p50 ${ms(quantile(getsApiserver, 0.5), 2)}, p99 ${ms(quantile(getsApiserver, 0.99), 2)}; straight to the control plane p50 ${ms(quantile(getsDirect, 0.5), 2)}`,
      '',
      '',
      '',
    ],
    [
      'read-after-claim: get at once after the claim answer',
      `${visibleAtOnce} / ${answeredAt.size} found; get p50 ${ms(quantile(getLatencies, 0.5), 2)}`,
      'visible the moment the answer returns',
      'p50 ≈ 29 s (next publish)',
      pass(visibleAtOnce === answeredAt.size),
    ],
    [
      'read-after-claim: ADDED in a watch through the apiserver, after the answer',
      `p50 ${ms(quantile(watchLags, 0.5), 2)}, p99 ${ms(quantile(watchLags, 0.99), 2)} (${watchLags.length} of ${answeredAt.size} seen)`,
      '',
      'p50 ≈ 29 s',
      '',
    ],
    [
      `list -A of ${listed} sandboxes through the apiserver`,
      `JSON p50 ${ms(quantile(listJson, 0.5))} (${(listBytes / 1024 / 1024).toFixed(1)} MiB); Table (kubectl's) p50 ${ms(quantile(listTable, 0.5))}; straight to the control plane JSON p50 ${ms(quantile(listDirect, 0.5))}`,
      '',
      '',
      '',
    ],
    [
      `kubectl get sandboxes -A (${listed}), wall time with kubectl's start`,
      `p50 ${ms(quantile(kubectlRuns, 0.5), 0)}`,
      '',
      '',
      '',
    ],
  ];
  printTable(
    '## Sandbox API (agents.x-k8s.io through the aggregation layer)',
    [machineNote(), `${NODES} nodes, claims through the HTTP claim API, reads with the admin client certificate`],
    rows,
  );
} finally {
  await claimsPool.close();
  await admin.close();
  await direct.close();
  await controlPlane.stop();
  await fleet.close();
  await redis.stop();
  await cluster.stop();
}
