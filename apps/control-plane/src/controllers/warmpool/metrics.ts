// The warm-pool driver's Prometheus metrics, all prefixed
// `warmpool_controlplane_`. Per-node series are removed when the node's
// inventory goes, and per-pool series when the pool goes or leadership ends,
// so a churning fleet does not grow the registry forever.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

const PREFIX = 'warmpool_controlplane_';

/** The `state` label of the nodes gauge: how the driver judges a node (not the agent's NodeState). */
export type NodeStateLabel =
  'ready' | 'stale' | 'failing' | 'draining' | 'no_address' | 'impossible_generation' | 'unverified_address';
export const NODE_STATES: readonly NodeStateLabel[] = [
  'ready',
  'stale',
  'failing',
  'draining',
  'no_address',
  'impossible_generation',
  'unverified_address',
];

export type PoolState = 'driven' | 'template_missing' | 'invalid_template';
export const POOL_STATES: readonly PoolState[] = ['driven', 'template_missing', 'invalid_template'];

/** How far a run answering a pool or template change got: see WarmPoolMetrics.specChangeAnswered. */
export type SpecAnswerStage = 'run_start' | 'handed_out' | 'run_end';

export type PushOutcomeLabel = 'applied' | 'stale_generation' | 'error';

export class WarmPoolMetrics {
  readonly registry: Registry;
  readonly #reconcile: ReturnType<typeof reconcileSeries>;
  readonly #push: ReturnType<typeof pushSeries>;
  readonly #fleet: ReturnType<typeof fleetSeries>;
  readonly #pool: ReturnType<typeof poolSeries>;
  /** Pools with per-pool series, "namespace/name" → the values last set, so a deleted pool's series go. */
  #poolSeries = new Map<string, { ready: number; desired: number }>();

  constructor(registry: Registry) {
    this.registry = registry;
    this.#reconcile = reconcileSeries([registry]);
    this.#push = pushSeries([registry]);
    this.#fleet = fleetSeries([registry]);
    this.#pool = poolSeries([registry]);
    for (const state of NODE_STATES) this.#fleet.nodes.set({ state }, 0);
    for (const state of POOL_STATES) this.#fleet.pools.set({ state }, 0);
    this.#reconcile.leader.set(0);
    // The status writer writes every field until the CRD is read.
    this.#pool.conditionsWritten.set(1);
  }

  spreadRun(kind: 'incremental' | 'full'): void {
    this.#reconcile.spreads.inc({ kind });
  }

  /** A run that drives began this long after the first poke it answers. */
  reconcileWaited(seconds: number): void {
    this.#reconcile.waited.observe(seconds);
  }

  /**
   * A run answering a pool or template change reached `stage` this long after the first such change it answers
   * (the informer's event): `run_start`, `handed_out` (its round took a generation; absent when nothing was pushed),
   * `run_end` (the round's requests leave once the run's turn ends).
   */
  specChangeAnswered(stage: SpecAnswerStage, seconds: number): void {
    this.#reconcile.specAnswered.observe({ stage }, seconds);
  }

  reconciled(seconds: number, outcome: 'ok' | 'error' | 'skipped', at: number): void {
    this.#reconcile.runs.inc({ outcome });
    if (outcome === 'skipped') return;
    this.#reconcile.duration.observe(seconds);
    if (outcome === 'ok') this.#reconcile.lastSuccess.set(at / 1000);
  }

  pools(counts: Record<PoolState, number>): void {
    for (const state of POOL_STATES) this.#fleet.pools.set({ state }, counts[state]);
  }

  nodes(counts: Record<NodeStateLabel, number>): void {
    for (const state of NODE_STATES) this.#fleet.nodes.set({ state }, counts[state]);
  }

  placement(unplacedReplicas: number, degradedPools: number): void {
    this.#fleet.unplaced.set(unplacedReplicas);
    this.#fleet.degradedPools.set(degradedPools);
  }

  /**
   * Every planned pool's ready / desired replicas; pools no longer planned lose their series. A series is set only
   * when its value moved (a run hands every pool over, an event moves few).
   */
  poolReplicas(pools: Iterable<{ ref: string; ready: number; desired: number }>): void {
    const seen = new Map<string, { ready: number; desired: number }>();
    for (const { ref, ready, desired } of pools) {
      const before = this.#poolSeries.get(ref);
      seen.set(ref, { ready, desired });
      if (before?.ready === ready && before.desired === desired) continue;
      const [pool_namespace = '', pool = ''] = ref.split('/');
      this.#pool.ready.set({ pool_namespace, pool }, ready);
      this.#pool.desired.set({ pool_namespace, pool }, desired);
    }
    for (const ref of this.#poolSeries.keys()) {
      if (seen.has(ref)) continue;
      const [pool_namespace = '', pool = ''] = ref.split('/');
      this.#pool.ready.remove({ pool_namespace, pool });
      this.#pool.desired.remove({ pool_namespace, pool });
    }
    this.#poolSeries = seen;
  }

  /**
   * Leadership ended: the per-pool series and the fleet's placement gauges are the leader's to report (a former
   * leader's last values would keep an alert on unplaced replicas firing from a standby).
   */
  forgetPools(): void {
    this.poolReplicas([]);
    this.placement(0, 0);
  }

  setPools(node: string, outcome: PushOutcomeLabel, seconds: number): void {
    this.#push.calls.inc({ outcome });
    this.#push.duration.observe(seconds);
    if (outcome === 'error') this.#push.errors.inc({ node });
  }

  probeFailed(node: string): void {
    this.#push.probeErrors.inc({ node });
  }

  forgetNode(node: string): void {
    this.#push.errors.remove({ node });
    this.#push.probeErrors.remove({ node });
  }

  leading(leading: boolean): void {
    this.#reconcile.leader.set(leading ? 1 : 0);
  }

  generation(generation: number): void {
    this.#push.generation.set(generation);
  }

  /** Whether the installed SandboxWarmPool CRD lets status.conditions be written (upstream's schema does not). */
  statusConditionsWritten(written: boolean): void {
    this.#pool.conditionsWritten.set(written ? 1 : 0);
  }

  statusWrite(outcome: 'written' | 'gone' | 'conflict' | 'error'): void {
    this.#pool.statusWrites.inc({ outcome });
  }

  event(reason: string): void {
    this.#pool.events.inc({ reason });
  }
}

type Registers = Registry[];

/** Observes a stage of the run answering a pool or template change, when it answers one and reached the stage. */
export function specAnswerTimer(
  metrics: WarmPoolMetrics,
  changedAt: number | undefined,
): (stage: SpecAnswerStage, at: number | undefined) => void {
  return (stage, at) => {
    if (changedAt !== undefined && at !== undefined)
      metrics.specChangeAnswered(stage, Math.max(0, at - changedAt) / 1000);
  };
}

function reconcileSeries(registers: Registers) {
  return {
    duration: new Histogram({
      name: `${PREFIX}reconcile_duration_seconds`,
      help: 'Duration of one global warm-pool reconcile (reads caches, spreads, hands pushes out, writes changed status)',
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    waited: new Histogram({
      name: `${PREFIX}reconcile_queue_wait_seconds`,
      help: 'From the first change (informer event, answer, interval) a reconcile answers to its start: the wait behind a run in flight or a busy event loop',
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    specAnswered: new Histogram({
      name: `${PREFIX}pool_change_answer_seconds`,
      help: 'From a pool or template change (the informer event) to the run answering it: its start, its round handed out, its end',
      labelNames: ['stage'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    runs: new Counter({
      name: `${PREFIX}reconciles_total`,
      help: 'Reconciles run, by outcome',
      labelNames: ['outcome'],
      registers,
    }),
    spreads: new Counter({
      name: `${PREFIX}spread_runs_total`,
      help: 'Spreads run by reconciles: incremental (only the pools an event changed) or full (a resync, a node set change, or room short somewhere)',
      labelNames: ['kind'],
      registers,
    }),
    lastSuccess: new Gauge({
      name: `${PREFIX}last_successful_reconcile_timestamp_seconds`,
      help: 'When the last reconcile completed without error (Unix time)',
      registers,
    }),
    leader: new Gauge({
      name: `${PREFIX}leader`,
      help: '1 while this replica holds the lease and drives the nodes',
      registers,
    }),
  };
}

function pushSeries(registers: Registers) {
  return {
    calls: new Counter({
      name: `${PREFIX}set_pools_total`,
      help: 'SetPools calls to node agents, by outcome',
      labelNames: ['outcome'],
      registers,
    }),
    duration: new Histogram({
      name: `${PREFIX}set_pools_duration_seconds`,
      help: 'Duration of one SetPools call to a node agent, retries included',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    errors: new Counter({
      name: `${PREFIX}set_pools_errors_total`,
      help: 'SetPools calls that failed after their retries, by node',
      labelNames: ['node'],
      registers,
    }),
    probeErrors: new Counter({
      name: `${PREFIX}agent_probe_errors_total`,
      help: 'Periodic GET /v1/info probes that failed, by node',
      labelNames: ['node'],
      registers,
    }),
    generation: new Gauge({
      name: `${PREFIX}generation`,
      help: 'The last SetPools generation handed out',
      registers,
    }),
  };
}

function fleetSeries(registers: Registers) {
  return {
    pools: new Gauge({
      name: `${PREFIX}pools`,
      help: 'SandboxWarmPools whose template opts in to warmpool, by state',
      labelNames: ['state'],
      registers,
    }),
    nodes: new Gauge({
      name: `${PREFIX}nodes`,
      help: 'Nodes with a NodeInventory, by state (ready = in placement)',
      labelNames: ['state'],
      registers,
    }),
    unplaced: new Gauge({
      name: `${PREFIX}unplaced_replicas`,
      help: 'Warm replicas asked for that found no room on any eligible node (placement failures)',
      registers,
    }),
    degradedPools: new Gauge({
      name: `${PREFIX}degraded_pools`,
      help: 'Pools with replicas that could not be placed',
      registers,
    }),
  };
}

function poolSeries(registers: Registers) {
  return {
    statusWrites: new Counter({
      name: `${PREFIX}status_writes_total`,
      help: 'SandboxWarmPool status writes, by outcome',
      labelNames: ['outcome'],
      registers,
    }),
    conditionsWritten: new Gauge({
      name: `${PREFIX}status_conditions_written`,
      help: "1 while the installed SandboxWarmPool CRD declares status.conditions and they are written; 0 under a schema without them (upstream's)",
      registers,
    }),
    events: new Counter({
      name: `${PREFIX}events_total`,
      help: 'Kubernetes Events emitted, by reason',
      labelNames: ['reason'],
      registers,
    }),
    // The pool's own namespace is `pool_namespace`: Prometheus attaches the scraped pod's as `namespace`.
    ready: new Gauge({
      name: `${PREFIX}pool_ready_replicas`,
      help: 'Warm replicas of the pool, as its status reports (the leader only)',
      labelNames: ['pool_namespace', 'pool'],
      registers,
    }),
    desired: new Gauge({
      name: `${PREFIX}pool_desired_replicas`,
      help: 'Replicas the pool asks for (the leader only)',
      labelNames: ['pool_namespace', 'pool'],
      registers,
    }),
  };
}
