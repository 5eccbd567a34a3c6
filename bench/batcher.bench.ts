// Benchmark of @warmpool/batcher: how fast add() is, and how long a full
// 2 000-item batch takes to close and reach the consumer.
// Run after `npx tsc -b libs/batcher`:  node bench/batcher.bench.ts
// Anchor: Karpenter logged 32.8 ms to batch 2 000 pods. Goal: hand-over <= 1 ms.
import { Batcher, DEFAULT_BATCH_OPTIONS } from '@warmpool/batcher';

const BATCH = DEFAULT_BATCH_OPTIONS.maxItems;
/** Each measurement stops at whichever comes first. */
const MAX_REPETITIONS = 2_000;
const TIME_BUDGET_MS = 2_500;

interface Summary {
  readonly p50: number;
  readonly p99: number;
  readonly repetitions: number;
}

function percentile(sorted: readonly number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, index)] ?? Number.NaN;
}

/** Runs `once` (which returns one sample) repeatedly, bounded in count and time, after a short warm-up. */
async function measure(once: () => Promise<number> | number, maxRepetitions = MAX_REPETITIONS): Promise<Summary> {
  for (let i = 0; i < 50; i++) await once();
  const samples: number[] = [];
  const deadline = performance.now() + TIME_BUDGET_MS;
  while (samples.length < maxRepetitions && performance.now() < deadline) samples.push(await once());
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99), repetitions: samples.length };
}

/** Milliseconds for BATCH back-to-back add() calls, with or without a wait() pending (an open window). */
async function addsMs(withPendingWait: boolean): Promise<number> {
  const batcher = new Batcher<number>();
  const handedOver = withPendingWait ? batcher.wait() : undefined;
  const start = performance.now();
  for (let i = 0; i < BATCH; i++) void batcher.add(i);
  const elapsedMs = performance.now() - start;
  await (handedOver ?? batcher.wait());
  batcher.close();
  return elapsedMs;
}

/** From the BATCH-th add() to the pending wait() resolving with all the items. */
async function handOverMs(): Promise<number> {
  const batcher = new Batcher<number>();
  const handedOver = batcher.wait();
  for (let i = 0; i < BATCH - 1; i++) void batcher.add(i);
  const start = performance.now();
  void batcher.add(BATCH - 1);
  const batch = await handedOver;
  const elapsedMs = performance.now() - start;
  if (batch.items.length !== BATCH) throw new Error(`expected ${BATCH} items, got ${batch.items.length}`);
  batcher.close();
  return elapsedMs;
}

/** Karpenter's "batched 2 000 pods in X": from the first add() of a burst to the hand-over. */
async function burstWindowMs(): Promise<number> {
  const batcher = new Batcher<number>();
  const handedOver = batcher.wait();
  const start = performance.now();
  for (let i = 0; i < BATCH; i++) void batcher.add(i);
  await handedOver;
  const elapsedMs = performance.now() - start;
  batcher.close();
  return elapsedMs;
}

/** What a lone claim pays with the default window: add() to hand-over through the idle gap. */
async function loneItemMs(): Promise<number> {
  const batcher = new Batcher<number>();
  const handedOver = batcher.wait();
  const start = performance.now();
  void batcher.add(0);
  await handedOver;
  const elapsedMs = performance.now() - start;
  batcher.close();
  return elapsedMs;
}

const ms = (value: number): string => `${value < 0.1 ? value.toFixed(4) : value.toFixed(3)} ms`;
/** A time for BATCH adds, as adds per second: the p99 time is the slow tail. */
const perSecond = (batchMs: number): string => `${(BATCH / batchMs / 1_000).toFixed(2)} M/s`;

const pendingAdds = await measure(() => addsMs(true), 500);
const idleAdds = await measure(() => addsMs(false), 500);
const handOver = await measure(handOverMs);
const burst = await measure(burstWindowMs);
const lone = await measure(loneItemMs, 300);

const KARPENTER_MS = 32.8;
const rows: readonly (readonly string[])[] = [
  ['metric', 'measured p50 / p99', 'goal', 'anchor', 'verdict'],
  [
    `add() with a wait() pending (window open), ${BATCH} per repetition`,
    `${perSecond(pendingAdds.p50)} / ${perSecond(pendingAdds.p99)}`,
    '—',
    `Karpenter: ${BATCH} pods in ${KARPENTER_MS} ms ≈ ${Math.round(BATCH / (KARPENTER_MS / 1_000)).toLocaleString('en')}/s`,
    'info',
  ],
  [
    `add() with nobody waiting, ${BATCH} per repetition`,
    `${perSecond(idleAdds.p50)} / ${perSecond(idleAdds.p99)}`,
    '—',
    '—',
    'info',
  ],
  [
    `close + hand over a full ${BATCH}-item batch (${BATCH}th add() → wait() resolves)`,
    `${ms(handOver.p50)} / ${ms(handOver.p99)}`,
    '≤ 1 ms',
    `${KARPENTER_MS} ms`,
    handOver.p99 <= 1 ? 'PASS' : handOver.p50 <= 1 ? 'PASS at p50, not p99' : 'FAIL',
  ],
  [
    `burst of ${BATCH} adds, first add() → hand-over (closes at maxItems)`,
    `${ms(burst.p50)} / ${ms(burst.p99)}`,
    '≤ 1 ms',
    `${KARPENTER_MS} ms`,
    burst.p99 <= 1 ? 'PASS' : burst.p50 <= 1 ? 'PASS at p50, not p99' : 'FAIL',
  ],
  [
    `lone item, add() → hand-over (default idle ${DEFAULT_BATCH_OPTIONS.idleMs} ms)`,
    `${ms(lone.p50)} / ${ms(lone.p99)}`,
    `≈ idle ${DEFAULT_BATCH_OPTIONS.idleMs} ms + timer tick`,
    'Karpenter: idle 1 000 ms',
    'info',
  ],
];

console.log(`@warmpool/batcher — Node ${process.version}, options ${JSON.stringify(DEFAULT_BATCH_OPTIONS)}`);
console.log(
  `repetitions: adds ${pendingAdds.repetitions}/${idleAdds.repetitions}, hand-over ${handOver.repetitions}, burst ${burst.repetitions}, lone ${lone.repetitions} (each bounded to ${TIME_BUDGET_MS} ms)\n`,
);
for (const [index, row] of rows.entries()) {
  console.log(`| ${row.join(' | ')} |`);
  if (index === 0) console.log(`|${row.map(() => '---').join('|')}|`);
}
