// Federation registry benchmark: bestForeignMember latency and throughput over
// 10 000 records, upsert throughput, and a full metrics publish.
//   npx tsc -b && node bench/federation.bench.ts
// Bounded: every phase runs for at most PHASE_MS of wall time.
import { Registry as PromRegistry } from 'prom-client';
import { FederationGauges, CapacityRegistry, publishMetrics, type CapacityObservation } from '@warmpool/federation';
import { prng } from './lib/prng.ts';

const PHASE_MS = 1_000;
const TTL_MS = 60_000; // far beyond the run, so nothing expires mid-measurement
const LOCAL = 'cluster-00';
const GROUPS = ['gpu', 'cpu', 'mem', 'arm'] as const;
const QUERY_GROUPS = ['', ...GROUPS];

const pad = (n: number): string => String(n).padStart(2, '0');

/**
 * One member's state: 60 % nothing idle, else 1-20 idle; autoscaling on for
 * half; headroom -1 (20 %), 0 (30 %) or 1-50 (50 %); age 0-10 s as from a hub.
 */
function memberState(
  random: () => number,
): Omit<CapacityObservation, 'clusterId' | 'namespace' | 'envName' | 'memberPool' | 'scalingGroup'> {
  const roll = random();
  return {
    idle: random() < 0.6 ? 0 : 1 + Math.floor(random() * 20),
    running: Math.floor(random() * 50),
    pending: Math.floor(random() * 5),
    desired: Math.floor(random() * 60),
    autoscalingEnabled: random() < 0.5,
    capacity: roll < 0.2 ? -1 : roll < 0.5 ? 0 : 1 + Math.floor(random() * 50),
    saturatedForMs: 0,
    ageMs: random() * 10_000,
  };
}

/**
 * Spread fleet: 10 clusters × 100 Envs (10 namespaces × 10 names) × 10 pools over 4 groups = 10 000 records, 100 per
 * Env.
 */
function spreadFleet(random: () => number): CapacityObservation[] {
  const out: CapacityObservation[] = [];
  for (let c = 0; c < 10; c++) {
    for (let n = 0; n < 10; n++) {
      for (let e = 0; e < 10; e++) {
        for (let p = 0; p < 10; p++) {
          out.push({
            clusterId: `cluster-${pad(c)}`,
            namespace: `ns-${pad(n)}`,
            envName: `env-${pad(e)}`,
            memberPool: `pool-${pad(p)}`,
            scalingGroup: GROUPS[p % GROUPS.length] ?? 'gpu',
            ...memberState(random),
          });
        }
      }
    }
  }
  return out;
}

/** Worst case: all 10 000 records in ONE Env, 100 clusters × 100 pools, so a query scans them all. */
function singleEnvFleet(random: () => number): CapacityObservation[] {
  const out: CapacityObservation[] = [];
  for (let c = 0; c < 100; c++) {
    for (let p = 0; p < 100; p++) {
      out.push({
        clusterId: `cluster-${pad(c)}`,
        namespace: 'ns-00',
        envName: 'env-00',
        memberPool: `pool-${pad(p)}`,
        scalingGroup: GROUPS[p % GROUPS.length] ?? 'gpu',
        ...memberState(random),
      });
    }
  }
  return out;
}

interface Query {
  namespace: string;
  env: string;
  group: string;
}

function queries(random: () => number, envs: number, count: number): Query[] {
  return Array.from({ length: count }, () => {
    const i = Math.floor(random() * envs);
    return {
      namespace: `ns-${pad(Math.floor(i / 10))}`,
      env: `env-${pad(i % 10)}`,
      group: QUERY_GROUPS[Math.floor(random() * QUERY_GROUPS.length)] ?? '',
    };
  });
}

let sink = 0; // consumed at the end so no call is optimised away

function percentile(sortedNs: Float64Array, p: number): number {
  return sortedNs[Math.min(sortedNs.length - 1, Math.floor((p / 100) * sortedNs.length))] ?? Number.NaN;
}

/** ops/s from a tight loop, then p50/p99 from individually timed calls; each for at most PHASE_MS. */
function measureBest(registry: CapacityRegistry, qs: Query[]): { opsPerSec: number; p50Us: number; p99Us: number } {
  for (let i = 0; i < 2_000; i++) {
    const q = qs[i % qs.length] as Query;
    sink += registry.bestForeignMember(q.namespace, q.env, q.group)?.idle ?? 0;
  }
  let calls = 0;
  const start = performance.now();
  while (performance.now() - start < PHASE_MS) {
    for (let i = 0; i < 100; i++, calls++) {
      const q = qs[calls % qs.length] as Query;
      sink += registry.bestForeignMember(q.namespace, q.env, q.group)?.idle ?? 0;
    }
  }
  const opsPerSec = calls / ((performance.now() - start) / 1_000);

  const samples = new Float64Array(Math.min(200_000, Math.max(1_000, Math.ceil(opsPerSec))));
  let taken = 0;
  const until = performance.now() + PHASE_MS;
  while (taken < samples.length && performance.now() < until) {
    const q = qs[taken % qs.length] as Query;
    const t0 = process.hrtime.bigint();
    const best = registry.bestForeignMember(q.namespace, q.env, q.group);
    samples[taken++] = Number(process.hrtime.bigint() - t0);
    sink += best?.idle ?? 0;
  }
  const sorted = samples.subarray(0, taken).sort();
  return { opsPerSec, p50Us: percentile(sorted, 50) / 1_000, p99Us: percentile(sorted, 99) / 1_000 };
}

/** Records per second upserted in batches of 100 (one cluster's poll of one Env), for at most PHASE_MS. */
function measureUpsert(records: CapacityObservation[], fresh: boolean): number {
  let registry = new CapacityRegistry({ localClusterId: LOCAL, ttlMs: TTL_MS });
  if (!fresh) registry.upsert(records);
  const batches: CapacityObservation[][] = [];
  for (let i = 0; i < records.length; i += 100) batches.push(records.slice(i, i + 100));
  let upserted = 0;
  let elapsed = 0;
  while (elapsed < PHASE_MS) {
    if (fresh) registry = new CapacityRegistry({ localClusterId: LOCAL, ttlMs: TTL_MS });
    const t0 = performance.now();
    for (const batch of batches) registry.upsert(batch);
    elapsed += performance.now() - t0;
    upserted += records.length;
  }
  sink += registry.size;
  return upserted / (elapsed / 1_000);
}

/** Mean ms of publishMetrics (snapshot, reset, set) over 10 000 records, for at most PHASE_MS. */
function measurePublish(registry: CapacityRegistry): number {
  const prom = new PromRegistry();
  const gauges = new FederationGauges(prom);
  publishMetrics(registry, gauges);
  let runs = 0;
  const start = performance.now();
  while (performance.now() - start < PHASE_MS) {
    publishMetrics(registry, gauges);
    runs++;
  }
  const meanMs = (performance.now() - start) / runs;
  gauges.close();
  return meanMs;
}

const random = prng(20_260_101);
const spread = spreadFleet(random);
const single = singleEnvFleet(random);

const spreadRegistry = new CapacityRegistry({ localClusterId: LOCAL, ttlMs: TTL_MS });
spreadRegistry.upsert(spread);
const singleRegistry = new CapacityRegistry({ localClusterId: LOCAL, ttlMs: TTL_MS });
singleRegistry.upsert(single);

const spreadBest = measureBest(spreadRegistry, queries(random, 100, 10_000));
const singleBest = measureBest(singleRegistry, queries(random, 1, 10_000));
const insertRate = measureUpsert(spread, true);
const refreshRate = measureUpsert(spread, false);
const publishMs = measurePublish(spreadRegistry);

interface Row {
  metric: string;
  measured: number;
  unit: string;
  goal: number;
  atMost: boolean;
}

const rows: Row[] = [
  {
    metric: 'bestForeignMember, spread (100 members/Env): ops/s',
    measured: spreadBest.opsPerSec,
    unit: 'ops/s',
    goal: 1_000,
    atMost: false,
  },
  { metric: 'bestForeignMember, spread: p50', measured: spreadBest.p50Us, unit: 'µs', goal: 1_000, atMost: true },
  { metric: 'bestForeignMember, spread: p99', measured: spreadBest.p99Us, unit: 'µs', goal: 1_000, atMost: true },
  {
    metric: 'bestForeignMember, one Env of 10 000 members: ops/s',
    measured: singleBest.opsPerSec,
    unit: 'ops/s',
    goal: 1_000,
    atMost: false,
  },
  {
    metric: 'bestForeignMember, one Env of 10 000: p50',
    measured: singleBest.p50Us,
    unit: 'µs',
    goal: 1_000,
    atMost: true,
  },
  {
    metric: 'bestForeignMember, one Env of 10 000: p99',
    measured: singleBest.p99Us,
    unit: 'µs',
    goal: 1_000,
    atMost: true,
  },
  {
    metric: 'upsert into an empty registry (batches of 100)',
    measured: insertRate,
    unit: 'records/s',
    goal: 100_000,
    atMost: false,
  },
  {
    metric: 'upsert refreshing a full registry (batches of 100)',
    measured: refreshRate,
    unit: 'records/s',
    goal: 100_000,
    atMost: false,
  },
  {
    metric: 'publishMetrics over 10 000 records (4 000 series/gauge)',
    measured: publishMs,
    unit: 'ms',
    goal: 100,
    atMost: true,
  },
];

const fmt = (n: number): string => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(n >= 10 ? 1 : 2));
console.log(
  'Fleet: 10 000 records. Spread = 10 clusters (1 local) × 100 Envs × 10 pools over 4 groups; one-Env = 100 clusters × 100 pools.',
);
console.log(
  'Member state: 60 % idle 0 else 1-20; autoscaling 50 %; headroom -1 20 % / 0 30 % / 1-50 50 %. Queries: random Env, group "" or one of 4.',
);
console.log(
  'The (namespace, env) index makes a query O(members of that Env): 100 in the spread fleet, 10 000 in the one-Env worst case.\n',
);
console.log('| metric | measured | goal | anchor | verdict |');
console.log('|---|---|---|---|---|');
let failed = false;
for (const row of rows) {
  const pass = row.atMost ? row.measured <= row.goal : row.measured >= row.goal;
  failed ||= !pass;
  console.log(
    `| ${row.metric} | ${fmt(row.measured)} ${row.unit} | ${row.atMost ? '≤' : '≥'} ${fmt(row.goal)} ${row.unit} | none | ${pass ? 'pass' : 'FAIL'} |`,
  );
}
if (sink === Number.MIN_SAFE_INTEGER) console.log(sink);
if (failed) process.exitCode = 1;
