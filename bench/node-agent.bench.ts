// What the node agent costs a claim: the same warm claim sent straight to
// fake-sandboxd and through the agent in front of it, in one run.
//
// fake-sandboxd and the agent each run as their own process (dist/main.js);
// this process is the client: one undici keep-alive Pool per path, same
// concurrency on both. Pools are huge and refill instant, so every claim is a
// warm hit and the difference is the agent's hop (auth, body limit, schema
// validation, the upstream call, pass-through). The agent runs with
// --no-inventory: the publisher is off the claim path and needs an apiserver.
// A third path goes through the barest Node proxy (node:http + undici, no
// auth, no validation, no framework): the floor any Node hop pays on this
// machine, so the agent's own share of the overhead can be told apart.
// Direct, floor and agent rounds alternate so drift on a shared machine hits all.
//
//   npx tsc -b apps/fake-sandboxd apps/node-agent && node bench/node-agent.bench.ts
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';

const TOKEN = 'bench-token';
const WARM_TARGET = 50_000;
const ROUNDS = 4;
const UNLOADED_ROUND_MS = 1_000;
const LOADED_ROUND_MS = 2_000;
const LOADED_CONCURRENCY = 32;
const CONNECTIONS = 16;

const distOf = (pkg: string): string => join(dirname(fileURLToPath(import.meta.resolve(pkg))), 'main.js');

interface Server {
  base: string;
  pid: number;
  stop(): Promise<number | null>;
}

/** CPU time a process has used, in µs (Linux /proc; NaN elsewhere). Clock ticks are 10 ms on Linux. */
function cpuMicros(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return Number.NaN;
  }
}

/** Spawns a dist/main.js and resolves once it logs `msg` (with the address under `field`). */
async function startProcess(argv: string[], env: NodeJS.ProcessEnv, msg: string, address: (record: Record<string, string>) => string): Promise<Server> {
  const child: ChildProcess = spawn(process.execPath, argv, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const stderr = child.stderr;
  if (stderr === null) throw new Error('no stderr');
  const lines = createInterface({ input: stderr });
  for await (const line of lines) {
    const record = JSON.parse(line) as Record<string, string>;
    if (record['msg'] === msg) {
      lines.close();
      stderr.resume();
      return {
        base: address(record),
        pid: child.pid ?? -1,
        stop: () => {
          child.kill('SIGTERM');
          return exited;
        },
      };
    }
  }
  throw new Error(`${argv[0]} exited before serving (code ${await exited})`);
}

/** The floor: a raw proxy as small as a Node hop gets, run with `node --input-type=module -e`. */
function floorProxySource(upstream: string): string {
  return `
    import { createServer } from 'node:http';
    import { Pool } from ${JSON.stringify(import.meta.resolve('undici'))};
    const upstream = new Pool(${JSON.stringify(upstream)}, { connections: 128 });
    const server = createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const out = [];
        let status = 0;
        upstream.dispatch({ method: req.method, path: req.url, headers: { authorization: req.headers.authorization, 'content-type': 'application/json' }, body: Buffer.concat(chunks) }, {
          onRequestStart() {},
          onResponseStart(_c, s) { status = s; },
          onResponseData(_c, d) { out.push(d); },
          onResponseEnd() { const b = Buffer.concat(out); res.writeHead(status, { 'content-type': 'application/json', 'content-length': b.length }); res.end(b); },
          onResponseError(_c, e) { res.writeHead(503); res.end(String(e)); },
        });
      });
    });
    server.listen(0, '127.0.0.1', () => console.error(JSON.stringify({ msg: 'floor serving', address: '127.0.0.1:' + server.address().port })));
    process.on('SIGTERM', () => { server.close(); upstream.close(); process.exit(0); });
  `;
}

const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
const CLAIM_BODY = JSON.stringify({ template: 'bench', ttl_seconds: 3600 });

async function call(pool: Pool, method: 'GET' | 'PUT' | 'POST', path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const res = await pool.request({ method, path, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.statusCode, text: await res.body.text() };
}

interface Tally {
  latenciesMs: number[];
  claims: number;
  errors: number;
  seconds: number;
  /** CPU µs used meanwhile by each watched process. */
  cpu: Map<number, number>;
}

const emptyTally = (): Tally => ({ latenciesMs: [], claims: 0, errors: 0, seconds: 0, cpu: new Map() });

async function claimFor(pool: Pool, durationMs: number, concurrency: number, into: Tally, watch: number[] = []): Promise<void> {
  const cpuBefore = watch.map(cpuMicros);
  const start = performance.now();
  const end = start + durationMs;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const t0 = performance.now();
      const res = await pool.request({ method: 'POST', path: '/v1/claim', headers, body: CLAIM_BODY });
      await res.body.text();
      into.latenciesMs.push(performance.now() - t0);
      if (res.statusCode === 200) into.claims++;
      else into.errors++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  into.seconds += (performance.now() - start) / 1000;
  watch.forEach((pid, i) => into.cpu.set(pid, (into.cpu.get(pid) ?? 0) + cpuMicros(pid) - (cpuBefore[i] as number)));
}

function quantile(values: number[], q: number): number {
  const sorted = Float64Array.from(values).sort();
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

type Row = [metric: string, measured: string, goal: string, anchor: string, ok: boolean | 'info'];

async function run(): Promise<void> {
  const sandboxd = await startProcess([distOf('@warmpool/fake-sandboxd'),
    '--listen', '127.0.0.1:0',
    '--api-token', TOKEN,
    '--max-claims', '10000000',
    '--room', '20000000',
    '--refill-rate', '100000000',
    '--refill-concurrency', '10000000',
    '--boot-ms', '0',
    '--warm-claim-ms', '0',
    '--default-ttl', '1h',
  ], {}, 'serving', (r) => `http://${r['address']}`);
  const floor = await startProcess(['--input-type=module', '-e', floorProxySource(sandboxd.base)], {}, 'floor serving', (r) => `http://${r['address']}`);
  const agent = await startProcess([distOf('@warmpool/node-agent'),
    '--listen', '127.0.0.1:0',
    '--sandboxd-url', sandboxd.base,
    '--no-inventory',
    '--log-level', 'info',
  ], { WARMPOOL_API_TOKEN: TOKEN }, 'node agent serving', (r) => r['url'] as string);

  const direct = new Pool(sandboxd.base, { connections: CONNECTIONS, pipelining: 1, keepAliveTimeout: 30_000 });
  const viaAgent = new Pool(agent.base, { connections: CONNECTIONS, pipelining: 1, keepAliveTimeout: 30_000 });
  const viaFloor = new Pool(floor.base, { connections: CONNECTIONS, pipelining: 1, keepAliveTimeout: 30_000 });
  try {
    const set = await call(viaAgent, 'PUT', '/v1/pools', { generation: 1, pools: [{ template: 'bench', warm: WARM_TARGET }] });
    if (set.status !== 200) throw new Error(`PUT /v1/pools answered ${set.status}: ${set.text}`);
    for (let warm = 0; warm < WARM_TARGET; ) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      const info = JSON.parse((await call(direct, 'GET', '/v1/info')).text) as { pools: Array<{ warm: number }> };
      warm = info.pools[0]?.warm ?? 0;
    }
    // Warm up connections and both JITs.
    for (const pool of [direct, viaFloor, viaAgent]) await claimFor(pool, 500, 4, emptyTally());

    const unloaded = { direct: emptyTally(), floor: emptyTally(), agent: emptyTally() };
    const loaded = { direct: emptyTally(), floor: emptyTally(), agent: emptyTally() };
    for (let round = 0; round < ROUNDS; round++) {
      await claimFor(direct, UNLOADED_ROUND_MS, 1, unloaded.direct);
      await claimFor(viaFloor, UNLOADED_ROUND_MS, 1, unloaded.floor);
      await claimFor(viaAgent, UNLOADED_ROUND_MS, 1, unloaded.agent);
    }
    for (let round = 0; round < ROUNDS; round++) {
      await claimFor(direct, LOADED_ROUND_MS, LOADED_CONCURRENCY, loaded.direct, [sandboxd.pid]);
      await claimFor(viaFloor, LOADED_ROUND_MS, LOADED_CONCURRENCY, loaded.floor, [floor.pid]);
      await claimFor(viaAgent, LOADED_ROUND_MS, LOADED_CONCURRENCY, loaded.agent, [agent.pid]);
    }

    const q = (t: Tally, p: number): number => quantile(t.latenciesMs, p);
    const added = (p: number, via: Tally = unloaded.agent): number => q(via, p) - q(unloaded.direct, p);
    const rate = (t: Tally): number => t.claims / t.seconds;
    const share = rate(loaded.agent) / rate(loaded.direct);
    const ms = (v: number): string => `${v.toFixed(3)} ms`;
    const perSecond = (v: number): string => `${v.toLocaleString('en-US', { maximumFractionDigits: 0 })}/s`;
    const cpuPerClaim = (t: Tally, pid: number): string => `${((t.cpu.get(pid) ?? Number.NaN) / t.claims).toFixed(1)} µs`;
    const errors = [...Object.values(unloaded), ...Object.values(loaded)].reduce((n, t) => n + t.errors, 0);

    const rows: Row[] = [
      ['added latency p50, 1 in flight', ms(added(0.5)), '≤ 0.1 ms', 'cocoonstack node gateway p50 0.039 ms', added(0.5) <= 0.1],
      ['added latency p95, 1 in flight', ms(added(0.95)), '—', 'cocoonstack node gateway p95 0.053 ms', 'info'],
      ['added latency p99, 1 in flight', ms(added(0.99)), '—', '—', 'info'],
      ['claim p50 / p99 direct, 1 in flight', `${ms(q(unloaded.direct, 0.5))} / ${ms(q(unloaded.direct, 0.99))}`, '—', '—', 'info'],
      ['claim p50 / p99 via agent, 1 in flight', `${ms(q(unloaded.agent, 0.5))} / ${ms(q(unloaded.agent, 0.99))}`, '—', '—', 'info'],
      [`claims/s direct, ${LOADED_CONCURRENCY} in flight`, perSecond(rate(loaded.direct)), '—', '—', 'info'],
      [`claims/s via agent, ${LOADED_CONCURRENCY} in flight`, perSecond(rate(loaded.agent)), '—', '—', 'info'],
      ['throughput via agent, share of direct', `${(share * 100).toFixed(1)} %`, '≥ 70 %', '—', share >= 0.7],
      [`added latency p50 / p99, ${LOADED_CONCURRENCY} in flight`, `${ms(q(loaded.agent, 0.5) - q(loaded.direct, 0.5))} / ${ms(q(loaded.agent, 0.99) - q(loaded.direct, 0.99))}`, '—', '—', 'info'],
      [`CPU per claim: agent / fake-sandboxd (${LOADED_CONCURRENCY} in flight)`, `${cpuPerClaim(loaded.agent, agent.pid)} / ${cpuPerClaim(loaded.direct, sandboxd.pid)}`, '—', '—', 'info'],
      ['floor (bare node:http + undici proxy): added p50 / p99, 1 in flight', `${ms(added(0.5, unloaded.floor))} / ${ms(added(0.99, unloaded.floor))}`, '—', '—', 'info'],
      ['floor: throughput share of direct / CPU per claim', `${((rate(loaded.floor) / rate(loaded.direct)) * 100).toFixed(1)} % / ${cpuPerClaim(loaded.floor, floor.pid)}`, '—', '—', 'info'],
      ['claims refused (non-200)', String(errors), '0', '—', errors === 0],
    ];
    const total = [...Object.values(unloaded), ...Object.values(loaded)].reduce((n, t) => n + t.claims, 0);
    console.log(`node agent overhead: fake-sandboxd, the agent and the floor proxy as separate processes, client = undici Pools ` +
      `(${CONNECTIONS} keep-alive conns) in this process; ${total.toLocaleString('en-US')} warm claims, direct / floor / agent rounds alternating\n`);
    console.log('| metric | measured | goal | anchor | verdict |');
    console.log('|---|---|---|---|---|');
    for (const [name, measured, goal, anchor, ok] of rows) console.log(`| ${name} | ${measured} | ${goal} | ${anchor} | ${ok === 'info' ? 'info' : ok ? 'PASS' : 'FAIL'} |`);
    if (rows.some((r) => r[4] === false)) process.exitCode = 1;
  } finally {
    await viaAgent.close();
    await viaFloor.close();
    await direct.close();
    for (const [name, server] of [['node agent', agent], ['floor proxy', floor], ['fake-sandboxd', sandboxd]] as const) {
      const code = await server.stop();
      if (code !== 0) {
        console.error(`${name} exited with ${code} on SIGTERM`);
        process.exitCode = 1;
      }
    }
  }
}

await run();
