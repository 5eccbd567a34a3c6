// The control plane's Prometheus metrics, all prefixed
// `warmpool_controlplane_`. Per-node series are removed when the node's
// inventory goes, so a churning fleet does not grow the registry forever.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

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

export type PushOutcomeLabel = 'applied' | 'stale_generation' | 'error';

export class ControlPlaneMetrics {
  readonly registry: Registry;
  readonly #reconcileDuration: Histogram;
  readonly #reconciles: Counter;
  readonly #pools: Gauge;
  readonly #nodes: Gauge;
  readonly #setPools: Counter;
  readonly #setPoolsDuration: Histogram;
  readonly #setPoolsErrors: Counter;
  readonly #probeErrors: Counter;
  readonly #unplaced: Gauge;
  readonly #degradedPools: Gauge;
  readonly #lastSuccess: Gauge;
  readonly #leader: Gauge;
  readonly #generation: Gauge;
  readonly #statusWrites: Counter;
  readonly #events: Counter;
  readonly #poolReady: Gauge;
  readonly #poolDesired: Gauge;
  /** Pools with per-pool series, "namespace/name", so a deleted pool's series go. */
  #poolSeries = new Set<string>();

  constructor(registry: Registry = new Registry(), build: { version?: string } = {}) {
    this.registry = registry;
    const registers = [registry];
    this.#reconcileDuration = new Histogram({
      name: `${PREFIX}reconcile_duration_seconds`,
      help: 'Duration of one global warm-pool reconcile (reads caches, spreads, hands pushes out, writes changed status)',
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.#reconciles = new Counter({
      name: `${PREFIX}reconciles_total`,
      help: 'Reconciles run, by outcome',
      labelNames: ['outcome'],
      registers,
    });
    this.#pools = new Gauge({
      name: `${PREFIX}pools`,
      help: 'SandboxWarmPools whose template opts in to warmpool, by state',
      labelNames: ['state'],
      registers,
    });
    this.#nodes = new Gauge({
      name: `${PREFIX}nodes`,
      help: 'Nodes with a NodeInventory, by state (ready = in placement)',
      labelNames: ['state'],
      registers,
    });
    this.#setPools = new Counter({
      name: `${PREFIX}set_pools_total`,
      help: 'SetPools calls to node agents, by outcome',
      labelNames: ['outcome'],
      registers,
    });
    this.#setPoolsDuration = new Histogram({
      name: `${PREFIX}set_pools_duration_seconds`,
      help: 'Duration of one SetPools call to a node agent, retries included',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.#setPoolsErrors = new Counter({
      name: `${PREFIX}set_pools_errors_total`,
      help: 'SetPools calls that failed after their retries, by node',
      labelNames: ['node'],
      registers,
    });
    this.#probeErrors = new Counter({
      name: `${PREFIX}agent_probe_errors_total`,
      help: 'Periodic GET /v1/info probes that failed, by node',
      labelNames: ['node'],
      registers,
    });
    this.#unplaced = new Gauge({
      name: `${PREFIX}unplaced_replicas`,
      help: 'Warm replicas asked for that found no room on any eligible node (placement failures)',
      registers,
    });
    this.#degradedPools = new Gauge({
      name: `${PREFIX}degraded_pools`,
      help: 'Pools with replicas that could not be placed',
      registers,
    });
    this.#lastSuccess = new Gauge({
      name: `${PREFIX}last_successful_reconcile_timestamp_seconds`,
      help: 'When the last reconcile completed without error (Unix time)',
      registers,
    });
    this.#leader = new Gauge({
      name: `${PREFIX}leader`,
      help: '1 while this replica holds the lease and drives the nodes',
      registers,
    });
    this.#generation = new Gauge({
      name: `${PREFIX}generation`,
      help: 'The last SetPools generation handed out',
      registers,
    });
    this.#statusWrites = new Counter({
      name: `${PREFIX}status_writes_total`,
      help: 'SandboxWarmPool status writes, by outcome',
      labelNames: ['outcome'],
      registers,
    });
    this.#events = new Counter({
      name: `${PREFIX}events_total`,
      help: 'Kubernetes Events emitted, by reason',
      labelNames: ['reason'],
      registers,
    });
    // The pool's own namespace is `pool_namespace`: Prometheus attaches the scraped pod's as `namespace`.
    this.#poolReady = new Gauge({
      name: `${PREFIX}pool_ready_replicas`,
      help: 'Warm replicas of the pool, as its status reports (the leader only)',
      labelNames: ['pool_namespace', 'pool'],
      registers,
    });
    this.#poolDesired = new Gauge({
      name: `${PREFIX}pool_desired_replicas`,
      help: 'Replicas the pool asks for (the leader only)',
      labelNames: ['pool_namespace', 'pool'],
      registers,
    });
    new Gauge({
      name: 'warmpool_build_info',
      help: 'Always 1; the labels say which build runs',
      labelNames: ['component', 'version', 'node_version'],
      registers,
    }).set({ component: 'control-plane', version: build.version ?? 'unknown', node_version: process.version }, 1);
    for (const state of NODE_STATES) this.#nodes.set({ state }, 0);
    for (const state of POOL_STATES) this.#pools.set({ state }, 0);
    this.#leader.set(0);
  }

  reconciled(seconds: number, outcome: 'ok' | 'error' | 'skipped', at: number): void {
    this.#reconciles.inc({ outcome });
    if (outcome === 'skipped') return;
    this.#reconcileDuration.observe(seconds);
    if (outcome === 'ok') this.#lastSuccess.set(at / 1000);
  }

  pools(counts: Record<PoolState, number>): void {
    for (const state of POOL_STATES) this.#pools.set({ state }, counts[state]);
  }

  nodes(counts: Record<NodeStateLabel, number>): void {
    for (const state of NODE_STATES) this.#nodes.set({ state }, counts[state]);
  }

  placement(unplacedReplicas: number, degradedPools: number): void {
    this.#unplaced.set(unplacedReplicas);
    this.#degradedPools.set(degradedPools);
  }

  /** Every planned pool's ready / desired replicas; pools no longer planned lose their series. */
  poolReplicas(pools: Iterable<{ ref: string; ready: number; desired: number }>): void {
    const seen = new Set<string>();
    for (const { ref, ready, desired } of pools) {
      const [pool_namespace = '', pool = ''] = ref.split('/');
      this.#poolReady.set({ pool_namespace, pool }, ready);
      this.#poolDesired.set({ pool_namespace, pool }, desired);
      seen.add(ref);
    }
    for (const ref of this.#poolSeries) {
      if (seen.has(ref)) continue;
      const [pool_namespace = '', pool = ''] = ref.split('/');
      this.#poolReady.remove({ pool_namespace, pool });
      this.#poolDesired.remove({ pool_namespace, pool });
    }
    this.#poolSeries = seen;
  }

  /** Leadership ended: the per-pool series are the leader's to report. */
  forgetPools(): void {
    this.poolReplicas([]);
  }

  setPools(node: string, outcome: PushOutcomeLabel, seconds: number): void {
    this.#setPools.inc({ outcome });
    this.#setPoolsDuration.observe(seconds);
    if (outcome === 'error') this.#setPoolsErrors.inc({ node });
  }

  probeFailed(node: string): void {
    this.#probeErrors.inc({ node });
  }

  forgetNode(node: string): void {
    this.#setPoolsErrors.remove({ node });
    this.#probeErrors.remove({ node });
  }

  leading(leading: boolean): void {
    this.#leader.set(leading ? 1 : 0);
  }

  generation(generation: number): void {
    this.#generation.set(generation);
  }

  statusWrite(outcome: 'written' | 'gone' | 'error'): void {
    this.#statusWrites.inc({ outcome });
  }

  event(reason: string): void {
    this.#events.inc({ reason });
  }

  async render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
