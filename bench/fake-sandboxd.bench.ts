// Warm claims against fake-sandboxd over loopback HTTP: the floor the node
// agent (which sits in front of sandboxd) is compared with later.
//
// The fake runs as a separate process (dist/main.js), so client and server do
// not share an event loop. Pools are huge and refill instant (boot 0 ms,
// unbounded rate), so every claim is a warm hit; room and max_claims are large
// enough that nothing is released. Two phases: one client in flight (latency
// of a single hand-over) and 32 in flight over a keep-alive pool (throughput).
//
//   npx tsc -b apps/fake-sandboxd test/harness && node bench/fake-sandboxd.bench.ts
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { startProcess, type Server } from './lib/serving-process.ts';
import { fleetCaller } from './lib/fleet-caller.ts';
import { UNBOUNDED_SANDBOXD_ARGS } from './lib/unbounded-sandboxd.ts';

const TOKEN = 'bench-token';
const UNLOADED_MS = 2_000;
const LOADED_MS = 7_000;
const LOADED_CONCURRENCY = 32;
const CONNECTIONS = 16;
const WARM_TARGET = 50_000;

const main = join(dirname(fileURLToPath(import.meta.resolve('@warmpool/fake-sandboxd'))), 'main.js');

function startServer(): Promise<Server> {
  return startProcess(
    [main, '--listen', '127.0.0.1:0', '--api-token', TOKEN, ...UNBOUNDED_SANDBOXD_ARGS, '--log-level', 'info'],
    {},
    'serving',
    (r) => `http://${r['address']}`,
  );
}

const { headers: auth, call } = fleetCaller(TOKEN);

interface Phase {
  claims: number;
  errors: number;
  seconds: number;
  latenciesMs: Float64Array;
}

const CLAIM_BODY = JSON.stringify({ template: 'bench', ttl_seconds: 3600 });

async function claimFor(pool: Pool, durationMs: number, concurrency: number): Promise<Phase> {
  const latencies: number[] = [];
  let errors = 0;
  const start = performance.now();
  const end = start + durationMs;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const t0 = performance.now();
      const res = await pool.request({ method: 'POST', path: '/v1/claim', headers: auth, body: CLAIM_BODY });
      await res.body.text();
      latencies.push(performance.now() - t0);
      if (res.statusCode !== 200) errors++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - start) / 1000;
  const sorted = Float64Array.from(latencies).sort();
  return { claims: latencies.length - errors, errors, seconds, latenciesMs: sorted };
}

function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

function metric(text: string, line: string): number {
  const match = new RegExp(`^${line.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(text);
  return match ? Number(match[1]) : Number.NaN;
}

type Row = [metric: string, measured: string, goal: string, anchor: string, ok: boolean | 'info'];

async function run(): Promise<void> {
  const server = await startServer();
  const pool = new Pool(server.base, { connections: CONNECTIONS, pipelining: 1, keepAliveTimeout: 30_000 });
  try {
    const set = await call(pool, 'PUT', '/v1/pools', { pools: [{ template: 'bench', warm: WARM_TARGET }] });
    if (set.status !== 200) throw new Error(`PUT /v1/pools answered ${set.status}: ${set.text}`);
    for (let warm = 0; warm < WARM_TARGET;) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      const info = JSON.parse((await call(pool, 'GET', '/v1/info')).text) as { pools: Array<{ warm: number }> };
      warm = info.pools[0]?.warm ?? 0;
    }
    await claimFor(pool, 300, 4); // warm up connections and the JIT

    const unloaded = await claimFor(pool, UNLOADED_MS, 1);
    const loaded = await claimFor(pool, LOADED_MS, LOADED_CONCURRENCY);
    const metrics = (await call(pool, 'GET', '/metrics')).text;
    const cold = metric(metrics, 'sandboxd_claims_total{tier="cold"}');
    const warm = metric(metrics, 'sandboxd_claims_total{tier="warm"}');
    const rate = loaded.claims / loaded.seconds;
    const ms = (v: number): string => `${v.toFixed(3)} ms`;

    const rows: Row[] = [
      [
        'warm claims/s (32 in flight, 16 keep-alive conns)',
        rate.toLocaleString('en-US', { maximumFractionDigits: 0 }),
        '≥ 2,700',
        'sandboxd refill 100-270 boots/s per node',
        rate >= 2_700,
      ],
      [
        'claim p50, 1 in flight',
        ms(quantile(unloaded.latenciesMs, 0.5)),
        '≤ 1 ms',
        'sandboxd warm hand-over < 1 ms',
        quantile(unloaded.latenciesMs, 0.5) <= 1,
      ],
      [
        'claim p99, 1 in flight',
        ms(quantile(unloaded.latenciesMs, 0.99)),
        '≤ 5 ms',
        'sandboxd warm hand-over < 1 ms',
        quantile(unloaded.latenciesMs, 0.99) <= 5,
      ],
      ['claim p50, 32 in flight', ms(quantile(loaded.latenciesMs, 0.5)), '—', '≈ 32 / throughput', 'info'],
      [
        'claim p99, 32 in flight',
        ms(quantile(loaded.latenciesMs, 0.99)),
        '≤ 50 ms',
        '—',
        quantile(loaded.latenciesMs, 0.99) <= 50,
      ],
      [
        'claims refused (non-200)',
        String(unloaded.errors + loaded.errors),
        '0',
        '—',
        unloaded.errors + loaded.errors === 0,
      ],
      ['claims that were cold', `${cold} of ${cold + warm}`, '0', 'every claim a warm hit', cold === 0],
    ];
    console.log(
      `fake-sandboxd warm claims: server = separate process (dist/main.js), client = undici Pool in this process; ` +
        `${unloaded.claims} unloaded + ${loaded.claims} loaded claims in ${(unloaded.seconds + loaded.seconds).toFixed(1)} s\n`,
    );
    console.log('| metric | measured | goal | anchor | verdict |');
    console.log('|---|---|---|---|---|');
    for (const [name, measured, goal, anchor, ok] of rows)
      console.log(`| ${name} | ${measured} | ${goal} | ${anchor} | ${ok === 'info' ? 'info' : ok ? 'PASS' : 'FAIL'} |`);
    if (rows.some((r) => r[4] === false)) process.exitCode = 1;
  } finally {
    await pool.close();
    const code = await server.stop();
    if (code !== 0) {
      console.error(`fake-sandboxd exited with ${code} on SIGTERM`);
      process.exitCode = 1;
    }
  }
}

await run();
