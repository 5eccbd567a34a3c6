// What the claim index costs Redis per claim, against the bare design's two
// scripts (bench/lib/bare-index-scripts.ts: reserve and record reduced to
// their writes), side by side on one redis-server, rounds interleaved. Each
// round runs batches of a 32-in-flight turn's size (17 claims over 3 nodes):
// the reservation of the batch, then a record per claim, the records of a
// turn in one script, as the batch claimer issues them. Redis's own time in
// the scripts (INFO commandstats, EVALSHA's usec: what each script ran
// included) and redis-server's CPU (/proc: its networking and parsing too),
// per claim. No agents, no BullMQ: the index's part of "Redis's side of the
// gap" in docs/benchmarks.md, measured alone. The job's progress (one HSET
// per batch into BullMQ's hash of the job) is written by the bare design's
// reservation only, as there is no job here: ≈ 0.1 µs per claim in the
// index's favour.
//   npx tsc -b && node bench/claim-index-scripts.bench.ts   (≈ 20 s; ROUNDS, BATCHES)
import { randomBytes } from 'node:crypto';
import { ClaimIndex } from '@warmpool/control-plane';
import { startRedis } from '@warmpool/harness';
import type { ClaimRecord } from '@warmpool/api';
import { Redis } from 'ioredis';
import { BARE_RECORD, BARE_RESERVE } from './lib/bare-index-scripts.ts';
import { cpuMsOf } from './lib/proc.ts';
import { redisCalls } from './lib/redis-commandstats.ts';
import { machineNote, median, printTable, type Row } from './lib/table.ts';

const ROUNDS = Number(process.env['ROUNDS'] ?? 6);
const BATCHES = Number(process.env['BATCHES'] ?? 1_500);
const BATCH = 17;
const NODES = 3;
const TTL_MS = 3_600_000;

interface BareScripts extends Redis {
  bareReserve(numberOfKeys: number, ...args: Array<string | number>): Promise<number>;
  bareRecord(numberOfKeys: number, ...args: Array<string | number>): Promise<number>;
}

const redis = await startRedis();
const client = new Redis(redis.url, { enableAutoPipelining: true }) as BareScripts;
client.defineCommand('bareReserve', { lua: BARE_RESERVE });
client.defineCommand('bareRecord', { lua: BARE_RECORD });
const index = new ClaimIndex(client);
const run = randomBytes(4).toString('hex');
const scope = { namespace: 'bench', door: 'http' } as const;

/** A grant as a node answers one, and the index records it. */
function recordOf(claimRef: string, i: number): ClaimRecord {
  return {
    id: `sb-${randomBytes(8).toString('hex')}`,
    token: randomBytes(24).toString('hex'),
    deadline: new Date(Date.now() + TTL_MS).toISOString(),
    ownerAddr: `10.0.0.${i % NODES}:9300`,
    node: `node-${i % NODES}`,
    namespace: scope.namespace,
    warmPool: 'claims',
    claimRef,
    tier: 'warm',
    door: 'http',
    owner: 'system:serviceaccount:bench:claimant',
  };
}

async function shippedBatch(batch: number): Promise<void> {
  const job = `cp-${run}-${batch}`;
  const claims = Array.from({ length: BATCH }, (_, i) => ({ claimRef: `${job}-${i}`, i }));
  const entries = claims.map(({ claimRef, i }) => ({
    scope,
    claimRef,
    tried: [{ node: `node-${i % NODES}`, address: `10.0.0.${i % NODES}:9300`, tier: 'warm' as const, at: Date.now() }],
  }));
  await index.reserve(entries, job, TTL_MS);
  await Promise.all(claims.map(({ claimRef, i }) => index.record(recordOf(claimRef, i), job)));
}

async function bareBatch(batch: number): Promise<void> {
  const job = `bare-${run}-${batch}`;
  const refs = Array.from({ length: BATCH }, (_, i) => `bare:ref:${job}-${i}`);
  await client.bareReserve(1 + refs.length, `bare:job:${job}`, ...refs, job, TTL_MS, '{}');
  const grants = refs.map((ref, i) => JSON.stringify(recordOf(ref, i)));
  await client.bareRecord(1 + refs.length, 'bare:unused', ...refs, TTL_MS, ...grants);
}

interface Sample {
  scriptUsec: number;
  cpuUs: number;
  commands: number;
}

let next = 0;
async function round(batchOf: (batch: number) => Promise<void>): Promise<Sample> {
  await client.flushall();
  const before = await redisCalls(redis.target);
  const cpuBefore = cpuMsOf(redis.pid);
  for (let b = 0; b < BATCHES; b++) await batchOf(next++);
  const cpuAfter = cpuMsOf(redis.pid);
  const after = await redisCalls(redis.target);
  const claims = BATCHES * BATCH;
  const usec = (m: Map<string, number>): number => m.get('evalsha') ?? 0;
  return {
    scriptUsec: (usec(after.usecByCommand) - usec(before.usecByCommand)) / claims,
    cpuUs: ((cpuAfter - cpuBefore) * 1000) / claims,
    commands: (after.total - before.total - 1) / claims,
  };
}

type Path = 'shipped' | 'bare';
const paths: Record<Path, (batch: number) => Promise<void>> = { shipped: shippedBatch, bare: bareBatch };
const samples: Record<Path, Sample[]> = { shipped: [], bare: [] };
const ORDERS: ReadonlyArray<readonly Path[]> = [
  ['shipped', 'bare'],
  ['bare', 'shipped'],
];
await round(shippedBatch); // warm-up: scripts loaded, the JIT warm
await round(bareBatch);
for (let r = 0; r < ROUNDS; r++) for (const name of ORDERS[r % 2] ?? []) samples[name].push(await round(paths[name]));

const text = (s: Sample[]): string => {
  const m = (pick: (x: Sample) => number): string => median(s.map(pick)).toFixed(1);
  const range = (pick: (x: Sample) => number): string =>
    `${Math.min(...s.map(pick)).toFixed(1)}–${Math.max(...s.map(pick)).toFixed(1)}`;
  return `scripts ${m((x) => x.scriptUsec)} µs (${range((x) => x.scriptUsec)}), redis-server CPU ${m((x) => x.cpuUs)} µs (${range((x) => x.cpuUs)}), ${m((x) => x.commands)} commands`;
};
const rows: Row[] = [
  ['bare design: reserve, then one record script per batch', text(samples.bare), 'floor', '', ''],
  ['claim index as shipped: reserve, then the records of a turn in one script', text(samples.shipped), '', '', ''],
  [
    'the index over the bare design, per claim',
    `scripts +${(median(samples.shipped.map((s) => s.scriptUsec)) - median(samples.bare.map((s) => s.scriptUsec))).toFixed(1)} µs, redis-server CPU +${(median(samples.shipped.map((s) => s.cpuUs)) - median(samples.bare.map((s) => s.cpuUs))).toFixed(1)} µs`,
    '',
    '',
    'info',
  ],
];
printTable(
  '## The claim index in Redis: its scripts against the bare design’s',
  [
    machineNote(),
    `${ROUNDS} rounds per path, interleaved, each ${BATCHES} batches of ${BATCH} claims over ${NODES} nodes; medians per claim (ranges over rounds).`,
  ],
  rows,
);
client.disconnect();
index.close();
await redis.stop();
