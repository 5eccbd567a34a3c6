// What a node agent's process costs the claims it proxies, apart from its
// claim path. The floor proxy's own code (bench/lib/floor-proxy.ts) runs in
// processes that differ from the bare floor in one thing each (the agents'
// Node flags, a retained heap the size @kubernetes/client-node keeps,
// prom-client's default metrics, a whole node agent started beside it), all
// in front of one fake-sandboxd, next to two bare floors and two node agents.
// Every path takes its turn in every round, so drift hits all of them; each
// path's CPU per claim is compared with the first floor's in the same round,
// and the rounds give a mean with its standard error.
//
// Two processes of the same code are in the list on purpose: how far apart
// they land is how much a process differs from its twin for reasons the code
// does not choose (its placement on the cores, its memory layout), the
// smallest effect one run can tell apart.
//
//   make build && flock /tmp/warmpool-bench.lock node bench/node-agent-process.bench.ts
//
// ROUNDS (default 20) rounds of 2 s at 32 in flight per path, after a 5 s
// loaded warm-up of each (≈ 7 min at the default); HEAP_MB (default 30) sizes
// the retained heap.
import { loadavg } from 'node:os';
import type { Pool } from 'undici';
import {
  agentNodeFlags,
  agentTo,
  CLAIM,
  fillWarmPool,
  floorInAgentTo,
  floorTo,
  poolTo,
  startSandboxd,
} from './lib/agent-hops.ts';
import { claimFor, emptyTally, type Tally } from './lib/claim-tally.ts';
import type { Server } from './lib/serving-process.ts';
import { median, printTable, signed, type Row } from './lib/table.ts';

const ROUNDS = Number(process.env['ROUNDS'] ?? 20);
const HEAP_MB = Number(process.env['HEAP_MB'] ?? 30);
const ROUND_MS = 2_000;
const WARM_MS = 5_000;
const CONCURRENCY = 32;
const CONNECTIONS = 16;
const WARM_TARGET = 50_000;

/** One way a claim reaches fake-sandboxd, and how its hop process is started. */
interface Variant {
  name: string;
  start(sandboxd: Server): Promise<Server>;
}

// Objects of a few fields, as a loaded library's are: ≈ 100 bytes each.
const retainedHeap = `;globalThis.retained = Array.from({ length: ${HEAP_MB * 10_000} }, (_, i) => ({ i, s: 'x' + i, a: [i, i + 1], o: { k: i } }));`;
const defaultMetrics = `;(await import(${JSON.stringify(import.meta.resolve('prom-client'))})).collectDefaultMetrics();`;

const VARIANTS: Variant[] = [
  { name: 'floor', start: (sandboxd) => floorTo(sandboxd) },
  { name: 'floor, its twin', start: (sandboxd) => floorTo(sandboxd) },
  { name: "floor with the agents' Node flags", start: (sandboxd) => floorTo(sandboxd, { nodeFlags: agentNodeFlags }) },
  { name: `floor with ${HEAP_MB} MB retained`, start: (sandboxd) => floorTo(sandboxd, { alongside: retainedHeap }) },
  {
    name: "floor with prom-client's default metrics",
    start: (sandboxd) => floorTo(sandboxd, { alongside: defaultMetrics }),
  },
  { name: "floor in a node agent's process", start: floorInAgentTo },
  { name: 'node agent', start: (sandboxd) => agentTo(sandboxd) },
  { name: 'node agent, its twin', start: (sandboxd) => agentTo(sandboxd) },
];

interface Path {
  variant: Variant;
  hop: Server;
  pool: Pool;
  warm: Tally;
  loaded: Tally;
}

/** The mean of `values` with its standard error. */
function meanWithError(values: number[]): { mean: number; error: number } {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const variance = values.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, values.length - 1);
  return { mean, error: Math.sqrt(variance / values.length) };
}

async function run(): Promise<void> {
  const loadBefore = loadavg()[0] as number;
  const sandboxd = await startSandboxd('127.0.0.1:0', (r) => `http://${r['address']}`);
  const paths: Path[] = [];
  try {
    for (const variant of VARIANTS) {
      const hop = await variant.start(sandboxd);
      paths.push({ variant, hop, pool: poolTo(hop.base, CONNECTIONS), warm: emptyTally(), loaded: emptyTally() });
    }
    const agent = paths.find((p) => p.variant.name === 'node agent') as Path;
    await fillWarmPool(agent.pool, agent.variant.name, WARM_TARGET);
    for (const p of paths) await claimFor(p.pool, CLAIM, WARM_MS, CONCURRENCY, p.warm, [p.hop.pid, sandboxd.pid]);
    for (let round = 0; round < ROUNDS; round++)
      for (const p of paths) await claimFor(p.pool, CLAIM, ROUND_MS, CONCURRENCY, p.loaded, [p.hop.pid, sandboxd.pid]);

    const floor = paths[0] as Path;
    const rows: Row[] = paths.map((p) => {
      const cpu = (p.loaded.cpu.get(p.hop.pid) ?? Number.NaN) / p.loaded.claims;
      const sandboxdCpu = (p.loaded.cpu.get(sandboxd.pid) ?? Number.NaN) / p.loaded.claims;
      const gaps = p.loaded.hopCpuPerClaim.map((c, i) => c - (floor.loaded.hopCpuPerClaim[i] ?? Number.NaN));
      const { mean, error } = meanWithError(gaps);
      const refused = p.loaded.errors + p.warm.errors;
      return [
        `CPU per claim at ${CONCURRENCY} in flight: ${p.variant.name}`,
        `${cpu.toFixed(1)} µs; − the floor, per round: mean ${signed(mean)} ± ${error.toFixed(1)} µs, median ${signed(median(gaps))} µs; ${(p.loaded.claims / p.loaded.seconds).toFixed(0)} claims/s; fake-sandboxd ${sandboxdCpu.toFixed(1)} µs${refused > 0 ? `; ${refused} refused` : ''}`,
        '—',
        '—',
        refused > 0 ? 'FAIL' : 'info',
      ];
    });
    printTable(
      "node agent process: the floor's proxy in processes that differ in one thing each",
      [
        `${ROUNDS} rounds × ${ROUND_MS / 1000} s per path after a ${WARM_MS / 1000} s warm-up; ± is the standard error of the per-round gaps; load average ${loadBefore.toFixed(2)} before, ${(loadavg()[0] as number).toFixed(2)} after`,
      ],
      rows,
    );
  } finally {
    for (const p of paths) await p.pool.close();
    for (const p of paths.reverse()) await p.hop.stop();
    await sandboxd.stop();
  }
}

await run();
