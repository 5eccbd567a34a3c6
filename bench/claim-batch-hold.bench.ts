// A pool's batch hold (apps/control-plane/src/provisioning/provisioner.ts) on
// synthetic callers, with the rejoin gap at 0 (the held claims go on the
// answer) and at the default: what each costs two kinds of callers.
// - Closed loop: 32 callers, each asking again a round trip (1 ms) after its
//   answer, as the claims bench's client does. Fewer batches per claim is
//   what the rejoin is for: each batch is a BullMQ job with its own Redis work.
// - One-shot bursts: 20 claims every 25 ms, one alone in its turn and 19 in
//   the next (so they are held behind it), whose callers never ask again, as
//   SandboxClaims or a burst of one-off clients. The held claims must not wait
//   the gap for callers that are not coming.
// The batch "job" answers all its claims 3 ms after it was sent. Rules
// alternate, three rounds each; everything in one process, no Redis.
//   make build && node bench/claim-batch-hold.bench.ts
import { Provisioner, type PendingClaim } from '@warmpool/control-plane';
import { printTable, quantile, type Row } from './lib/table.ts';

const SERVICE_MS = 3;
const ROUND_MS = 2_000;
const ROUNDS = 3;
const CALLERS = 32;
const BURST = 20;
const BURST_EVERY_MS = 25;
const REJOIN_MS = Number(process.env['REJOIN_MS'] ?? 5);

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

interface Result {
  latencies: number[];
  batches: number;
}

function provisioner(rejoinMs: number, result: Result): Provisioner {
  return new Provisioner({
    namespace: 'bench',
    name: 'pool',
    key: { template: 'img', net: 'none', size: 'small' },
    batcher: { idleMs: 0 },
    rejoinMs,
    dispatch: async (_, batch) => {
      result.batches++;
      await sleep(SERVICE_MS);
      for (const claim of batch.items) claim.resolve(grantOf(claim));
    },
  });
}

function grantOf(claim: PendingClaim): Parameters<PendingClaim['resolve']>[0] {
  return {
    id: `sb_${claim.order.claimRef}`,
    token: 't',
    deadline: '',
    ownerAddr: '',
    node: 'n',
    namespace: 'bench',
    warmPool: 'pool',
    claimRef: claim.order.claimRef,
    tier: 'warm',
    door: 'http',
    owner: '',
  };
}

let sequence = 0;
async function timedClaim(pool: Provisioner, result: Result): Promise<void> {
  const start = performance.now();
  await pool.add({
    namespace: 'bench',
    warmPool: 'pool',
    claimRef: `c${++sequence}`,
    ttlSeconds: 60,
    owner: { door: 'http', digest: '0123456789abcdef0123456789abcdef' },
  });
  result.latencies.push(performance.now() - start);
}

async function closedLoop(rejoinMs: number): Promise<Result> {
  const result: Result = { latencies: [], batches: 0 };
  const pool = provisioner(rejoinMs, result);
  const until = performance.now() + ROUND_MS;
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      while (performance.now() < until) {
        await timedClaim(pool, result);
        await sleep(1);
      }
    }),
  );
  await pool.stop();
  return result;
}

async function bursts(rejoinMs: number): Promise<Result> {
  const result: Result = { latencies: [], batches: 0 };
  const pool = provisioner(rejoinMs, result);
  const until = performance.now() + ROUND_MS;
  const claims: Array<Promise<void>> = [];
  while (performance.now() < until) {
    claims.push(timedClaim(pool, result));
    await turn();
    for (let i = 1; i < BURST; i++) claims.push(timedClaim(pool, result));
    await sleep(BURST_EVERY_MS);
  }
  await Promise.all(claims);
  await pool.stop();
  return result;
}

const rules = [0, REJOIN_MS];
const runs = new Map<string, Result[]>();
for (let round = 0; round < ROUNDS; round++)
  for (const rejoinMs of rules)
    for (const [load, run] of [
      ['closed loop', closedLoop],
      ['bursts', bursts],
    ] as const) {
      const key = `${load}|${rejoinMs}`;
      runs.set(key, [...(runs.get(key) ?? []), await run(rejoinMs)]);
    }

const merged = (load: string, rejoinMs: number): Result => {
  const results = runs.get(`${load}|${rejoinMs}`) ?? [];
  return { latencies: results.flatMap((r) => r.latencies), batches: results.reduce((n, r) => n + r.batches, 0) };
};
const meanBatch = ({ latencies, batches }: Result): number => latencies.length / Math.max(1, batches);
const p50 = (load: string, rejoinMs: number): number => quantile(merged(load, rejoinMs).latencies, 0.5);
const rows: Row[] = [];
for (const rejoinMs of rules)
  for (const load of ['closed loop', 'bursts']) {
    const result = merged(load, rejoinMs);
    const { latencies, batches } = result;
    rows.push([
      `${load}, rejoin gap ${rejoinMs} ms`,
      `${latencies.length} claims in ${batches} batches (mean ${meanBatch(result).toFixed(1)}); latency p50 ${quantile(latencies, 0.5).toFixed(2)} ms, p99 ${quantile(latencies, 0.99).toFixed(2)} ms`,
      '',
      '',
      '',
    ]);
  }
const closedGain = meanBatch(merged('closed loop', REJOIN_MS)) / meanBatch(merged('closed loop', 0));
const burstCost = p50('bursts', REJOIN_MS) - p50('bursts', 0);
rows.push(
  [
    `closed loop: mean batch with the gap / without`,
    `${closedGain.toFixed(2)}×`,
    '≥ 1.5× (the callers join the held claims)',
    '',
    closedGain >= 1.5 ? 'PASS' : 'FAIL',
  ],
  [
    `bursts: p50 with the gap − without`,
    `${burstCost.toFixed(2)} ms`,
    '≤ 0.5 ms (held claims do not wait for callers that are not coming)',
    `the gap: ${REJOIN_MS} ms`,
    burstCost <= 0.5 ? 'PASS' : 'FAIL',
  ],
);
printTable(
  "## A pool's batch hold on synthetic callers",
  [
    `Node ${process.version}; the batch answers ${SERVICE_MS} ms after it is sent; ${ROUNDS} rounds × ${ROUND_MS} ms per load and gap, alternating.`,
    `Closed loop: ${CALLERS} callers, each asking again 1 ms after its answer. Bursts: ${BURST} one-shot claims every ${BURST_EVERY_MS} ms, 1 in one turn and ${BURST - 1} in the next.`,
  ],
  rows,
);
