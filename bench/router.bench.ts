// What the router's hop costs: the same sandbox runtime call sent straight to
// the sandbox's ownerAddr (with the sandbox's token, as a client inside the
// node's network would) and through the router (as upstream's Python client
// sends it: X-Sandbox-* headers, no token; the router runs with the demo
// ServiceAccount as its tokenless user, so each call is reviewed by a cached
// SubjectAccessReview and routed by a cached route), in one run.
//
// The local stack (`make up`'s): real kube-apiserver + etcd, Redis, the control
// plane with its Sandbox API, one node (agent + fake-sandboxd) and the router,
// each its own process; this process is the client, one undici keep-alive Pool
// per path. Paths take turns round by round, so drift on a shared machine hits
// all. A floor proxy (the barest Node hop to the same sandbox) shows what any
// process hop costs on this machine. Operations: `execute` of `echo` (a small JSON answer), and `download`
// of a 1 MiB file.
//   npx tsc -b && node bench/router.bench.ts
// About 1 minute.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ownerAddrOrigin, runtimeBasePath } from '@warmpool/api';
import { eventually, startStack, type LocalStack } from '@warmpool/harness';
import { Pool } from 'undici';
import { startProcess } from './lib/serving-process.ts';
import { machineNote, ms, pass, printTable, quantile, type Row } from './lib/table.ts';

const ROUNDS = 6;
const CALLS_PER_ROUND = Number(process.env['CALLS_PER_ROUND'] ?? 300);
const GOAL_RATIO = 1.2;
const FILE_BYTES = 1024 * 1024;
const PATHS = ['direct', 'floor', 'routed'] as const;

interface Call {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
}

async function timed(pool: Pool, call: Call): Promise<number> {
  const started = performance.now();
  const res = await pool.request({ ...call, body: call.body ?? null });
  await res.body.arrayBuffer();
  if (res.statusCode !== 200) throw new Error(`${call.method} ${call.path}: ${res.statusCode}`);
  return performance.now() - started;
}

/**
 * The floor: the barest Node proxy to the same sandbox (node:http + undici, the sandbox's token added, bodies
 * streamed; no headers checked, no review, no route lookup): what any process hop costs here.
 */
function floorProxySource(origin: string, base: string, token: string): string {
  return `
    import { createServer } from 'node:http';
    import { pipeline } from 'node:stream/promises';
    import { Pool } from ${JSON.stringify(import.meta.resolve('undici'))};
    const upstream = new Pool(${JSON.stringify(origin)}, { connections: 16 });
    const server = createServer(async (req, res) => {
      const headers = { authorization: ${JSON.stringify(`Bearer ${token}`)} };
      for (const h of ['content-type', 'content-length']) if (req.headers[h] !== undefined) headers[h] = req.headers[h];
      const answer = await upstream.request({ method: req.method, path: ${JSON.stringify(base)} + req.url, headers, body: req.method === 'GET' ? null : req });
      const out = {};
      for (const h of ['content-type', 'content-length']) if (typeof answer.headers[h] === 'string') out[h] = answer.headers[h];
      res.writeHead(answer.statusCode, out);
      await pipeline(answer.body, res);
    });
    server.listen(0, '127.0.0.1', () => console.error(JSON.stringify({ msg: 'floor serving', address: '127.0.0.1:' + server.address().port })));
    process.on('SIGTERM', () => { server.close(); upstream.close(); process.exit(0); });
  `;
}

async function kubectl(stack: LocalStack, args: string[], input?: string): Promise<string> {
  const r = await stack.cluster.kubectl(args, input === undefined ? {} : { input });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'warmpool-router-bench-'));
  const stack = await startStack({
    dir,
    nodes: 1,
    loopbackPrefix: '127.0.25',
    controlPlanePort: 0,
    claimsPort: 0,
    routerPort: 0,
    sample: { replicas: 2 },
  });
  try {
    const namespace = stack.description.namespace;
    const pool = stack.description.sample?.name ?? '';
    const name = 'bench-sandbox';
    await kubectl(
      stack,
      ['create', '-f', '-'],
      JSON.stringify({
        apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
        kind: 'SandboxClaim',
        metadata: { name, namespace },
        spec: { warmPoolRef: { name: pool } },
      }),
    );
    await eventually(
      async () => (await stack.cluster.kubectl(['get', 'secret', name, '-n', namespace, '-o', 'name'])).code === 0,
      { timeoutMs: 30_000, what: 'the claim Secret' },
    );
    const secret = JSON.parse(await kubectl(stack, ['get', 'secret', name, '-n', namespace, '-o', 'json'])) as {
      data: Record<string, string>;
    };
    const field = (key: string): string => Buffer.from(secret.data[key] ?? '', 'base64').toString('utf8');
    const [id, token, ownerAddr] = [field('id'), field('token'), field('ownerAddr')];

    const base = runtimeBasePath(id);
    const floorServer = await startProcess(
      ['--input-type=module', '-e', floorProxySource(ownerAddrOrigin(ownerAddr), base, token)],
      {},
      'floor serving',
      (record) => `http://${record['address'] ?? ''}`,
    );
    const direct = new Pool(ownerAddrOrigin(ownerAddr), { connections: 4 });
    const routed = new Pool(stack.description.routerUrl ?? '', { connections: 4 });
    const floor = new Pool(floorServer.base, { connections: 4 });
    const directAuth = { authorization: `Bearer ${token}` };
    const routerHeaders = {
      'x-sandbox-id': name,
      'x-sandbox-namespace': namespace,
      'x-sandbox-port': '8888',
      'x-sandbox-timeout': '60',
    };
    const form = `--b\r\nContent-Disposition: form-data; name="file"; filename="blob"\r\n\r\n${'x'.repeat(FILE_BYTES)}\r\n--b--\r\n`;
    await timed(direct, {
      method: 'POST',
      path: `${base}/upload`,
      headers: { ...directAuth, 'content-type': 'multipart/form-data; boundary=b' },
      body: form,
    });
    const execBody = '{"command": "echo hello"}';
    const operations: Array<{ name: string; direct: Call; routed: Call; floor: Call }> = [
      {
        name: 'execute (echo)',
        direct: {
          method: 'POST',
          path: `${base}/execute`,
          headers: { ...directAuth, 'content-type': 'application/json' },
          body: execBody,
        },
        routed: {
          method: 'POST',
          path: '/execute',
          headers: { ...routerHeaders, 'content-type': 'application/json' },
          body: execBody,
        },
        floor: { method: 'POST', path: '/execute', headers: { 'content-type': 'application/json' }, body: execBody },
      },
      {
        name: 'download (1 MiB)',
        direct: { method: 'GET', path: `${base}/download/blob`, headers: directAuth },
        routed: { method: 'GET', path: '/download/blob', headers: routerHeaders },
        floor: { method: 'GET', path: '/download/blob', headers: {} },
      },
    ];

    const rows: Row[] = [];
    for (const op of operations) {
      // Warm both paths (connections, the router's caches, JIT).
      const pools = { direct, routed, floor };
      for (let i = 0; i < 200; i++) for (const path of PATHS) await timed(pools[path], op[path]);
      const samples = { direct: [] as number[], routed: [] as number[], floor: [] as number[] };
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 === 0 ? PATHS : [...PATHS].reverse();
        for (const path of order)
          for (let i = 0; i < CALLS_PER_ROUND; i++) samples[path].push(await timed(pools[path], op[path]));
      }
      for (const q of [0.5, 0.99]) {
        const d = quantile(samples.direct, q);
        const r = quantile(samples.routed, q);
        const label = q === 0.5 ? 'p50' : 'p99';
        rows.push([
          `${op.name} ${label}: router / direct`,
          `${(r / d).toFixed(2)}× (${ms(r, 2)} vs ${ms(d, 2)}; +${ms(r - d, 2)})`,
          `≤ ${GOAL_RATIO}×`,
          `direct ${ms(d, 2)}`,
          pass(r / d <= GOAL_RATIO),
        ]);
        const f = quantile(samples.floor, q);
        rows.push([
          `${op.name} ${label}: floor proxy / direct`,
          `${(f / d).toFixed(2)}× (${ms(f, 2)}; +${ms(f - d, 2)})`,
          'n/a (what any Node hop costs)',
          `direct ${ms(d, 2)}`,
          'n/a',
        ]);
      }
    }
    await direct.close();
    await routed.close();
    await floor.close();
    await floorServer.stop();
    const metrics = await (await fetch(`${stack.description.routerUrl}/metrics`)).text();
    const refusals = metrics.split('\n').filter((l) => l.startsWith('warmpool_router_refusals_total{'));
    printTable(
      'Router hop: a sandbox runtime call through the router vs straight to the ownerAddr (same run, one client at a time)',
      [
        machineNote(),
        `load average at the end: ${loadavg()
          .map((l) => l.toFixed(2))
          .join(', ')} (other work shares the machine)`,
        `${ROUNDS} alternating rounds × ${CALLS_PER_ROUND} calls per path and operation; every process on loopback`,
        `router refusals during the run: ${refusals.length === 0 ? 'none' : refusals.join(', ')}`,
      ],
      rows,
    );
  } finally {
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
