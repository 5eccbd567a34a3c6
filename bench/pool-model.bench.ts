// pool-model benchmark: spread() over 1 000 nodes × 1 000 pools, and how many
// warm targets move after +1 replica and after -1 node, against the minimum.
//   npx tsc -b libs/pool-model && node bench/pool-model.bench.ts
// Bounded: a fixed number of spreads (well under a minute on 2 cores).
import {
  minimumTargetsMoved,
  spread,
  targetsMoved,
  type PoolDemand,
  type SpreadNode,
  type Targets,
} from '@warmpool/pool-model';
import { prng } from './lib/prng.ts';

const NODES = 1_000;
const POOLS = 1_000;
const TIMED_RUNS = 15;
const CHURN_TRIALS = 50;
const GOAL_MS = 50;

const between = (random: () => number, lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo + 1));

/**
 * Replicas per pool, long-tailed like real template catalogues: 70 % of pools
 * want 1-4 warm sandboxes, 25 % want 5-32, 5 % want 33-512 (mean ≈ 20).
 */
function makePools(random: () => number): PoolDemand[] {
  return Array.from({ length: POOLS }, (_, i) => {
    const roll = random();
    const replicas =
      roll < 0.7 ? between(random, 1, 4) : roll < 0.95 ? between(random, 5, 32) : between(random, 33, 512);
    return {
      id: `registry.example/team-${i % 37}/image-${i}:v1|${i % 3 === 0 ? 'egress' : 'none'}|${i % 4 === 0 ? 'large' : 'small'}`,
      replicas,
    };
  });
}

/** Roomy: capacity 64 per node, 0-16 of it claimed: room 48-64, about 2.8× the demand. */
function roomyNodes(random: () => number): SpreadNode[] {
  return Array.from({ length: NODES }, (_, i) => ({
    name: `node-${String(i).padStart(4, '0')}`,
    room: 64 - between(random, 0, 16),
  }));
}

/** Tight: room per node ≈ 1.02 × the mean demand per node, ±2: most nodes are contested. */
function tightNodes(random: () => number, demand: number): SpreadNode[] {
  const mean = Math.floor((demand / NODES) * 1.02);
  return Array.from({ length: NODES }, (_, i) => ({
    name: `node-${String(i).padStart(4, '0')}`,
    room: mean + between(random, -2, 2),
  }));
}

function timeSpread(pools: PoolDemand[], nodes: SpreadNode[], previous: Targets): { median: number; max: number } {
  for (let i = 0; i < 3; i++) spread(pools, nodes, previous); // warm the JIT
  const samples: number[] = [];
  for (let i = 0; i < TIMED_RUNS; i++) {
    const start = performance.now();
    spread(pools, nodes, previous);
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  return { median: samples[Math.floor(samples.length / 2)] ?? NaN, max: samples[samples.length - 1] ?? NaN };
}

/** Σ moved and Σ minimum over trials of one change applied to a settled state. */
function churn(
  settled: Targets,
  trials: number,
  change: (trial: number) => Targets,
): { moved: number; minimum: number; worstExtra: number } {
  let moved = 0;
  let minimum = 0;
  let worstExtra = 0;
  for (let t = 0; t < trials; t++) {
    const after = change(t);
    const m = targetsMoved(settled, after);
    const least = minimumTargetsMoved(settled, after);
    moved += m;
    minimum += least;
    worstExtra = Math.max(worstExtra, m - least);
  }
  return { moved, minimum, worstExtra };
}

function settle(pools: PoolDemand[], nodes: SpreadNode[]): Targets {
  return spread(pools, nodes, spread(pools, nodes).targets).targets;
}

const grow = (pools: PoolDemand[], index: number): PoolDemand[] =>
  pools.map((p, i) => (i === index ? { ...p, replicas: p.replicas + 1 } : p));
const without = (nodes: SpreadNode[], index: number): SpreadNode[] => nodes.filter((_, i) => i !== index);

// ---- anchors: what simpler designs would cost ---------------------------------

function fnv(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** Rendezvous with a full comparator sort of the nodes per pool, room ignored: O(pools × nodes log nodes). */
function naiveSortedRendezvous(pools: PoolDemand[], nodes: SpreadNode[]): number {
  const start = performance.now();
  const targets = new Map<string, Map<string, number>>(nodes.map((n) => [n.name, new Map()]));
  const nodeHashes = nodes.map((n) => ({ name: n.name, hash: fnv(n.name) }));
  for (const pool of pools) {
    const ph = fnv(pool.id);
    const ranked = nodeHashes
      .map((n) => ({ name: n.name, score: Math.imul(ph ^ n.hash, 0x85ebca6b) >>> 0 }))
      .sort((a, b) => b.score - a.score);
    for (let u = 0; u < pool.replicas; u++) {
      const held = targets.get((ranked[u % ranked.length] as { name: string }).name) as Map<string, number>;
      held.set(pool.id, (held.get(pool.id) ?? 0) + 1);
    }
  }
  return performance.now() - start;
}

/** Dealing round-robin from hash(pool) mod N over the name-sorted nodes: the classic unstable spread. */
function modNDealing(pools: PoolDemand[], nodes: SpreadNode[]): Targets {
  const names = nodes.map((n) => n.name).sort();
  const targets = new Map<string, Map<string, number>>(names.map((n) => [n, new Map()]));
  for (const pool of pools) {
    const offset = fnv(pool.id) % names.length;
    for (let u = 0; u < pool.replicas; u++) {
      const held = targets.get(names[(offset + u) % names.length] as string) as Map<string, number>;
      held.set(pool.id, (held.get(pool.id) ?? 0) + 1);
    }
  }
  return targets;
}

// ---- run --------------------------------------------------------------------

const random = prng(20_240_601);
const pools = makePools(random);
const demand = pools.reduce((sum, p) => sum + p.replicas, 0);
const roomy = roomyNodes(random);
const tight = tightNodes(random, demand);
const picks = Array.from({ length: CHURN_TRIALS }, () => ({
  pool: Math.floor(random() * POOLS),
  node: Math.floor(random() * NODES),
}));

const roomySettled = settle(pools, roomy);
const tightSettled = settle(pools, tight);
const roomyTime = timeSpread(pools, roomy, roomySettled);
const coldTime = timeSpread(pools, roomy, new Map());
const tightTime = timeSpread(pools, tight, tightSettled);
const naiveMs = naiveSortedRendezvous(pools, roomy);

const pick = (t: number): { pool: number; node: number } => picks[t] ?? { pool: 0, node: 0 };
const roomyPlus = churn(
  roomySettled,
  CHURN_TRIALS,
  (t) => spread(grow(pools, pick(t).pool), roomy, roomySettled).targets,
);
const roomyMinusNode = churn(
  roomySettled,
  CHURN_TRIALS,
  (t) => spread(pools, without(roomy, pick(t).node), roomySettled).targets,
);
const tightPlus = churn(
  tightSettled,
  CHURN_TRIALS,
  (t) => spread(grow(pools, pick(t).pool), tight, tightSettled).targets,
);
const tightMinusNode = churn(
  tightSettled,
  CHURN_TRIALS,
  (t) => spread(pools, without(tight, pick(t).node), tightSettled).targets,
);
const modN = modNDealing(pools, roomy);
const modNPlus = churn(modN, CHURN_TRIALS, (t) => modNDealing(grow(pools, pick(t).pool), roomy));
const modNMinusNode = churn(modN, CHURN_TRIALS, (t) => modNDealing(pools, without(roomy, pick(t).node)));

const tightUnplaced = [...spread(pools, tight, tightSettled).unplaced.values()].reduce((a, b) => a + b, 0);
let entries = 0;
let maxLoad = 0;
for (const held of roomySettled.values()) {
  entries += held.size;
  let load = 0;
  for (const units of held.values()) load += units;
  maxLoad = Math.max(maxLoad, load);
}

const ms = (v: number): string => `${v.toFixed(1)} ms`;
const verdictTime = (v: number): string => (v <= GOAL_MS ? 'PASS' : 'FAIL');
const movedCell = (c: { moved: number; minimum: number }): string => `${c.moved} (min ${c.minimum})`;
const verdictChurn = (c: { moved: number; minimum: number }): string =>
  c.moved === c.minimum ? 'PASS' : `+${c.moved - c.minimum} over min`;

const rows: string[][] = [
  ['metric', 'measured', 'goal', 'anchor', 'verdict'],
  [
    'spread 1000×1000, roomy, with previous (p50 / max)',
    `${ms(roomyTime.median)} / ${ms(roomyTime.max)}`,
    `≤ ${GOAL_MS} ms`,
    `full-sort rendezvous: ${ms(naiveMs)}`,
    verdictTime(roomyTime.median),
  ],
  [
    'spread 1000×1000, roomy, no previous (p50 / max)',
    `${ms(coldTime.median)} / ${ms(coldTime.max)}`,
    `≤ ${GOAL_MS} ms`,
    '',
    verdictTime(coldTime.median),
  ],
  [
    'spread 1000×1000, tight room (p50 / max)',
    `${ms(tightTime.median)} / ${ms(tightTime.max)}`,
    `≤ ${GOAL_MS} ms`,
    '',
    verdictTime(tightTime.median),
  ],
  [
    `targets moved, +1 replica, roomy (Σ of ${CHURN_TRIALS} trials)`,
    movedCell(roomyPlus),
    '= minimum',
    `mod-N dealing: ${movedCell(modNPlus)}`,
    verdictChurn(roomyPlus),
  ],
  [
    `targets moved, -1 node, roomy (Σ of ${CHURN_TRIALS} trials)`,
    movedCell(roomyMinusNode),
    '= minimum',
    `mod-N dealing: ${movedCell(modNMinusNode)}`,
    verdictChurn(roomyMinusNode),
  ],
  [
    `targets moved, +1 replica, tight (Σ of ${CHURN_TRIALS} trials)`,
    movedCell(tightPlus),
    '= minimum',
    '',
    verdictChurn(tightPlus),
  ],
  [
    `targets moved, -1 node, tight (Σ of ${CHURN_TRIALS} trials)`,
    movedCell(tightMinusNode),
    '= minimum',
    '',
    verdictChurn(tightMinusNode),
  ],
  [
    'sparse targets (roomy): (node, pool) entries',
    String(entries),
    `≪ ${NODES * POOLS} dense`,
    '',
    entries < (NODES * POOLS) / 10 ? 'PASS' : 'FAIL',
  ],
  ['busiest node / mean load (roomy)', `${maxLoad} / ${(demand / NODES).toFixed(1)}`, 'info', '', ''],
  ['unplaced replicas (tight)', String(tightUnplaced), 'info', '', ''],
];

console.log(
  `@warmpool/pool-model — Node ${process.version}, 2 cores shared; ${NODES} nodes × ${POOLS} pools, ${demand} replicas`,
);
console.log(
  'replicas per pool: 70 % 1-4, 25 % 5-32, 5 % 33-512; roomy: room 48-64 per node; tight: Σ room ≈ 1.02 × demand',
);
rows.forEach((row, index) => {
  console.log(`| ${row.join(' | ')} |`);
  if (index === 0) console.log(`|${row.map(() => '---').join('|')}|`);
});
