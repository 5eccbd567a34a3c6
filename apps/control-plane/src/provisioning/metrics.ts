// The provisioning pipeline's metrics, prefixed `warmpool_controlplane_`, in
// the control plane's registry: claim latency by path and tier, claims by
// result and reason, batch sizes and windows, node claim calls, jobs waiting
// and active (read from the queue at scrape time), and where a claim's time
// goes on the worker (claim_stage_seconds). Those observed on every claim
// (duration, claims, stages, node claims) are kept metrics: their series are
// made once here and observed without a label lookup (libs/runtime
// kept-metric.ts); the text is prom-client's.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { CLAIM_FAILURE_REASONS, claimDoorSchema, type ClaimFailureReason } from '@warmpool/api';
import { KeptCounter, KeptHistogram, type CounterSeries, type HistogramSeries } from '@warmpool/runtime';
import type { ClaimDoor, ClaimTier } from './claim-service.js';
import { answerWithin } from './within.js';

const PREFIX = 'warmpool_controlplane_';

/**
 * How long a scrape waits for a value it reads from Redis before showing the last one: a stalled Redis (a stopped
 * process, a partition that drops packets) must not hold up /metrics, which waits for every collect.
 */
const SCRAPE_READ_MS = 1_000;

const NODE_CLAIM_OUTCOMES = ['served', 'full', 'redirected', 'refused', 'unreachable'] as const;
export type NodeClaimOutcome = (typeof NODE_CLAIM_OUTCOMES)[number];

const CLAIM_STAGES = ['queue', 'reserve', 'node', 'record'] as const;
/**
 * A stage of the claim path on the worker: `queue` (a batch job queued → this worker starts it; across replicas it
 * includes their clocks' skew), `reserve` (the batch's reservations written), `node` (one claim call to a node agent),
 * `record` (one served claim written to the index).
 */
export type ClaimStage = (typeof CLAIM_STAGES)[number];

// Every tier, for its series made in advance: the compiler refuses a tier missing here, or one that is not.
const CLAIM_TIERS = Object.keys({ warm: true, cold: true } satisfies Record<ClaimTier, true>) as ClaimTier[];

type ClaimsLabel = 'path' | 'result' | 'reason';

/** What the scrape-time gauges read from Redis. */
export interface ProvisioningReaders {
  jobCounts(): Promise<{ waiting: number; active: number }>;
  /** Whether the claim index is recovering from a loss. */
  recovering(): Promise<boolean>;
}

export class ProvisioningMetrics {
  readonly #claimDuration: Record<ClaimDoor, Record<ClaimTier, HistogramSeries<'path' | 'tier'>>>;
  readonly #served: Record<ClaimDoor, CounterSeries<ClaimsLabel>>;
  readonly #failed: Record<ClaimDoor, Record<ClaimFailureReason, CounterSeries<ClaimsLabel>>>;
  readonly #batchSize: Histogram;
  readonly #batchWindow: Histogram;
  readonly #stages: Record<ClaimStage, HistogramSeries<'stage'>>;
  readonly #nodeClaims: Record<NodeClaimOutcome, CounterSeries<'outcome'>>;
  readonly #adopted: Counter;
  readonly #released: Counter;
  readonly #stalled: Counter;

  constructor(registry: Registry, readers: ProvisioningReaders) {
    const registers = [registry];
    const doors = claimDoorSchema.options;
    const claimDuration = new KeptHistogram({
      name: `${PREFIX}claim_duration_seconds`,
      help: 'From a claim entering the pipeline to its answer, served claims only, by path (the front door: http / crd / fed) and tier (warm / cold)',
      labelNames: ['path', 'tier'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registry,
    });
    this.#claimDuration = each(doors, (path) => each(CLAIM_TIERS, (tier) => claimDuration.series({ path, tier })));
    const claims = new KeptCounter({
      name: `${PREFIX}claims_total`,
      help: 'Claims answered, by path, result (served / failed) and failure reason ("" when served)',
      labelNames: ['path', 'result', 'reason'],
      registry,
    });
    this.#served = each(doors, (path) => claims.series({ path, result: 'served', reason: '' }));
    this.#failed = each(doors, (path) =>
      each(CLAIM_FAILURE_REASONS, (reason) => claims.series({ path, result: 'failed', reason })),
    );
    this.#batchSize = new Histogram({
      name: `${PREFIX}claim_batch_size`,
      help: 'Claims per batch (one BullMQ job each)',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2000],
      registers,
    });
    this.#batchWindow = new Histogram({
      name: `${PREFIX}claim_batch_window_seconds`,
      help: 'How long each batch window stayed open',
      buckets: [0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1],
      registers,
    });
    const stages = new KeptHistogram({
      name: `${PREFIX}claim_stage_seconds`,
      help: 'Where claims spend their time on the batch worker, by stage: queue (job queued → started here, per batch), reserve (per batch), node (per node agent claim call), record (per served claim)',
      labelNames: ['stage'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registry,
    });
    this.#stages = each(CLAIM_STAGES, (stage) => stages.series({ stage }));
    const nodeClaims = new KeptCounter({
      name: `${PREFIX}node_claims_total`,
      help: 'POST /v1/claim calls to node agents by the batch workers, by outcome',
      labelNames: ['outcome'],
      registry,
    });
    this.#nodeClaims = each(NODE_CLAIM_OUTCOMES, (outcome) => nodeClaims.series({ outcome }));
    this.#adopted = new Counter({
      name: `${PREFIX}claims_adopted_total`,
      help: 'Claims a retried or stalled job found already served on a node it had asked (answered, not claimed twice)',
      registers,
    });
    this.#released = new Counter({
      name: `${PREFIX}claims_released_unanswered_total`,
      help: 'Sandboxes released because their caller gave up before the answer and cannot come back for them',
      registers,
    });
    this.#stalled = new Counter({
      name: `${PREFIX}claim_jobs_stalled_total`,
      help: "Batch jobs this replica's worker found stalled (their worker died or froze) and took over",
      registers,
    });
    scrapeGauges(registers, readers);
  }

  served(path: ClaimDoor, tier: ClaimTier, seconds: number): void {
    this.#claimDuration[path][tier].observe(seconds);
    this.#served[path].inc();
  }

  failed(path: ClaimDoor, reason: ClaimFailureReason): void {
    this.#failed[path][reason].inc();
  }

  batch(size: number, windowMs: number): void {
    this.#batchSize.observe(size);
    this.#batchWindow.observe(windowMs / 1000);
  }

  /** `startedMs`: performance.now() when the stage began. */
  stage(stage: ClaimStage, startedMs: number): void {
    this.#stages[stage].observe((performance.now() - startedMs) / 1000);
  }

  /** `queuedAt`: epoch ms (with a fraction) when the batch job was queued, from the replica that queued it. */
  queued(queuedAt: number): void {
    this.#stages.queue.observe(Math.max(0, epochNowMs() - queuedAt) / 1000);
  }

  nodeClaim(outcome: NodeClaimOutcome): void {
    this.#nodeClaims[outcome].inc();
  }

  adopted(): void {
    this.#adopted.inc();
  }

  stalledJob(): void {
    this.#stalled.inc();
  }

  releasedUnanswered(): void {
    this.#released.inc();
  }
}

/** The gauges read from Redis at scrape time; Redis down or stalled, each keeps its last value (readiness says why). */
function scrapeGauges(registers: Registry[], { jobCounts, recovering }: ProvisioningReaders): void {
  const jobs: Gauge = new Gauge({
    name: `${PREFIX}claim_jobs`,
    help: 'Batch jobs in the shared queue, by state (waiting / active), as this replica read them at scrape time',
    labelNames: ['state'],
    registers,
    collect: async () => {
      const counts = await withinScrape(jobCounts);
      if (counts === undefined) return;
      jobs.set({ state: 'waiting' }, counts.waiting);
      jobs.set({ state: 'active' }, counts.active);
    },
  });
  const recoveringGauge: Gauge = new Gauge({
    name: `${PREFIX}claim_index_recovering`,
    help: '1 while the claim index recovers from a loss (Redis restarted empty, or a replica promoted): each batch first looks for its fresh claims on every node, so claims are slower until a complete repair sweep ends it; read at scrape time',
    registers,
    collect: async () => {
      const value = await withinScrape(recovering);
      if (value !== undefined) recoveringGauge.set(value ? 1 : 0);
    },
  });
}

/** One value per key, as a record: the series for label values known in advance, reached by a property read. */
function each<K extends string, V>(keys: readonly K[], make: (key: K) => V): Record<K, V> {
  return Object.fromEntries(keys.map((key) => [key, make(key)])) as Record<K, V>;
}

/** Epoch milliseconds with a sub-millisecond fraction (the batch job's `queuedAt`). */
export function epochNowMs(): number {
  return performance.timeOrigin + performance.now();
}

/** What `read` answers within SCRAPE_READ_MS, or undefined when it fails or takes longer (its answer is then dropped). */
async function withinScrape<T>(read: () => Promise<T>): Promise<T | undefined> {
  return answerWithin(read(), SCRAPE_READ_MS);
}
