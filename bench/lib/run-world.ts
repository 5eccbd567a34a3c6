// The warm-pool reconciler from apps/control-plane/dist over in-memory caches
// of the fleet benchmark's world (its NodeInventories, Nodes, templates and
// pools), with agents that apply what they are sent and answer at once, and a
// status writer whose writes land in the cache. Each run that answers a pool
// change is timed from the poke: its start, its round handed out, its first
// setPools call, its end, and its phases (the run's debug log).
import type { KubeNode, NodeInventory, PoolTarget, SandboxTemplate, SandboxWarmPool } from '@warmpool/api';
import {
  addressCheckOf,
  GenerationSource,
  MemoryEpochStore,
  WarmPoolMetrics,
  WarmPoolReconciler,
  type SpecAnswerStage,
} from '@warmpool/control-plane';
import {
  appliedInfoOf,
  InFlight,
  inventoryObject,
  kubeNodeObject,
  ManualClock,
  poolObject,
  templateObject,
} from '@warmpool/harness';
import { Lister, ObjectStore } from '@warmpool/kube';
import { silentLogger, type Logger } from '@warmpool/runtime';
import { Registry } from 'prom-client';
import type { PoolSpec } from './pools.ts';

const NAMESPACE = 'default';

/** One answered pool change, in ms from the poke. */
export interface RunTiming {
  runStart: number;
  handedOut: number | undefined;
  firstSetPools: number | undefined;
  runEnd: number;
  /** The run's phases (nodes, plan, spread, push, status), ms each. */
  phases: Readonly<Record<string, number>>;
  /** CPU (user + system) of the process from the poke until the world was quiet again (answers' runs included). */
  cpuMs: number;
}

/** The driver's metrics, keeping what the benchmark times: the stages of the run answering a pool change. */
class TimingMetrics extends WarmPoolMetrics {
  runs = 0;
  /** Each run's own duration, in order. */
  runMs: number[] = [];
  stages = new Map<SpecAnswerStage, number>();

  override reconciled(seconds: number, outcome: 'ok' | 'error' | 'skipped', at: number): void {
    this.runs++;
    this.runMs.push(seconds * 1000);
    super.reconciled(seconds, outcome, at);
  }

  override specChangeAnswered(stage: SpecAnswerStage, seconds: number): void {
    this.stages.set(stage, seconds * 1000);
    super.specChangeAnswered(stage, seconds);
  }
}

export interface BenchWorldOptions {
  nodes: number;
  /** Every node's capacity (its inventory's status.capacity). */
  capacity: number;
  pools: readonly PoolSpec[];
  /** Each patch's run is a full resync (the floor/peer: the same reconciler without the incremental path). */
  resyncEveryPoke: boolean;
}

export class BenchWorld {
  readonly name: string;
  readonly reconciler: WarmPoolReconciler;
  readonly #pools = new ObjectStore<SandboxWarmPool>();
  readonly #resyncEveryPoke: boolean;
  readonly #calls = new InFlight();
  readonly #metrics = new TimingMetrics(new Registry());
  readonly #leadership = new AbortController();
  #rv = 1000;
  /** Set while a patch is timed: performance.now() of its first setPools call. */
  #firstSetPools: number | undefined;
  #timing = false;
  /** The phases of the run that answered the pool change (its debug line follows its run_end stage). */
  #phases: Readonly<Record<string, number>> | undefined;

  constructor(name: string, options: BenchWorldOptions) {
    this.name = name;
    this.#resyncEveryPoke = options.resyncEveryPoke;
    const clock = new ManualClock();
    const templates = new ObjectStore<SandboxTemplate>();
    const inventories = new ObjectStore<NodeInventory>();
    const kubeNodes = new ObjectStore<KubeNode>();
    for (const spec of options.pools) {
      templates.upsert(templateObject(NAMESPACE, spec.name, spec.image));
      this.#pools.upsert(poolObject(NAMESPACE, spec.name, spec.name, spec.replicas));
    }
    for (let i = 0; i < options.nodes; i++) {
      const node = `node-${String(i).padStart(4, '0')}`;
      inventories.upsert(inventoryObject(node, { publishedAt: clock.iso(), capacity: options.capacity }));
      kubeNodes.upsert(kubeNodeObject(node));
    }
    const nodes = new Lister(kubeNodes);
    const calls = this.#calls;
    const applied = (pools: readonly PoolTarget[]) => appliedInfoOf(pools);
    this.reconciler = new WarmPoolReconciler({
      pools: new Lister(this.#pools),
      templates: new Lister(templates),
      inventories: new Lister(inventories),
      addresses: () => addressCheckOf({ node: (name) => nodes.get(name) }),
      setter: {
        setPools: (_node, _generation, pools) => {
          if (this.#timing) this.#firstSetPools ??= performance.now();
          return calls.track(async () => applied(pools));
        },
        info: () => calls.track(async () => appliedInfoOf([])),
        close: async () => undefined,
      },
      statusWriter: {
        write: (pool, status) =>
          calls.track(async () => {
            const updated = { ...pool, metadata: { ...pool.metadata, resourceVersion: String(++this.#rv) }, status };
            this.#pools.upsert(updated);
            return { outcome: 'written' as const, object: updated };
          }),
      },
      events: { record: () => undefined, close: async () => undefined },
      generations: new GenerationSource(new MemoryEpochStore()),
      token: () => 'fleet',
      metrics: this.#metrics,
      logger: this.#phaseLogger(),
      clock,
    });
  }

  /** Takes the lead and waits until every node holds its set and every status is written. */
  async fill(): Promise<void> {
    this.reconciler.lead(this.#leadership.signal);
    await this.settle();
  }

  /** The interval's run, on its own: a full resync with nothing changed. Resolves with the run's ms. */
  async resync(): Promise<number> {
    const before = this.#metrics.runs;
    this.reconciler.pokeResync('periodic');
    await this.settle();
    const ms = this.#metrics.runMs[before];
    if (ms === undefined) throw new Error(`${this.name}: the resync did not run`);
    return ms;
  }

  /** Sets a pool's replicas as the informer would see the patch, pokes the run, and times it. */
  async patch(name: string, replicas: number): Promise<RunTiming> {
    const pool = this.#pools.get(`${NAMESPACE}/${name}`);
    if (pool === undefined) throw new Error(`no pool ${name}`);
    this.#pools.upsert({
      ...pool,
      metadata: {
        ...pool.metadata,
        resourceVersion: String(++this.#rv),
        generation: (pool.metadata?.generation ?? 1) + 1,
      },
      spec: { ...pool.spec, replicas },
    });
    this.#metrics.stages.clear();
    this.#firstSetPools = undefined;
    this.#phases = undefined;
    this.#timing = true;
    const cpu = process.cpuUsage();
    const poked = performance.now();
    this.reconciler.pokeSpec('pool changed');
    if (this.#resyncEveryPoke) this.reconciler.pokeResync('pool changed');
    await this.settle();
    const used = process.cpuUsage(cpu);
    this.#timing = false;
    const stage = (s: SpecAnswerStage): number | undefined => this.#metrics.stages.get(s);
    const runStart = stage('run_start');
    const runEnd = stage('run_end');
    if (runStart === undefined || runEnd === undefined)
      throw new Error(`${this.name}: the patch of ${name} ran no run`);
    return {
      runStart,
      handedOut: stage('handed_out'),
      firstSetPools: this.#firstSetPools === undefined ? undefined : this.#firstSetPools - poked,
      runEnd,
      phases: this.#phases ?? {},
      cpuMs: (used.user + used.system) / 1000,
    };
  }

  /** Until no call is in flight and no run starts for a few turns. */
  settle(): Promise<void> {
    return this.#calls.quiet(() => this.#metrics.runs, { timeoutMs: 60_000 });
  }

  async close(): Promise<void> {
    this.#leadership.abort();
    await this.reconciler.close();
  }

  /** Keeps the phases of the run that answered the pool change: its `reconciled` debug line. */
  #phaseLogger(): Logger {
    const logger: Logger = {
      ...silentLogger,
      debug: (msg, fields) => {
        if (msg !== 'reconciled' || !this.#timing || this.#phases !== undefined) return;
        if (!this.#metrics.stages.has('run_end')) return;
        this.#phases = (fields?.['phasesMs'] ?? {}) as Record<string, number>;
      },
      child: () => logger,
    };
    return logger;
  }
}
