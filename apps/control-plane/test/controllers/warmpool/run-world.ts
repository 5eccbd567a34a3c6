// A warm-pool reconciler over its own in-memory caches, with agents that apply
// what they are sent (or fail while told to) and a status writer whose writes
// land in its cache: two of these fed the same events tell whether an
// incremental run decides what a full one does (incremental.properties.test.ts).
import type {
  KubeNode,
  KubeObject,
  NodeInfo,
  NodeInventory,
  PoolTarget,
  SandboxTemplate,
  SandboxWarmPool,
  SandboxWarmPoolStatus,
} from '@warmpool/api';
import {
  InFlight,
  inventoryObject,
  kubeNodeObject,
  poolObject,
  templateObject,
  type ManualClock,
} from '@warmpool/harness';
import { expect } from 'vitest';
import { Lister, ObjectStore } from '@warmpool/kube';
import { silentLogger } from '@warmpool/runtime';
import { Registry } from 'prom-client';
import { WarmPoolMetrics } from '../../../src/controllers/warmpool/metrics.js';
import { WarmPoolReconciler } from '../../../src/controllers/warmpool/reconciler.js';
import { GenerationSource, MemoryEpochStore } from '../../../src/generation/generation.js';
import { addressCheckOf } from '../../../src/nodes/addresses.js';

/**
 * A cache that tells of every change, as an informer's event handlers hear it: the specs' stand-in for the watch
 * wiring (watch.ts), which names the node whose inventory or Node changed.
 */
export class WatchedStore<T extends KubeObject> extends ObjectStore<T> {
  onChange: (name: string | undefined) => void = () => undefined;

  override upsert(obj: T): T | undefined {
    const old = super.upsert(obj);
    this.onChange(obj.metadata?.name);
    return old;
  }

  override remove(key: string): T | undefined {
    const old = super.remove(key);
    if (old !== undefined) this.onChange(old.metadata?.name);
    return old;
  }
}

/** The driver's metrics, counting the reconciles it reports (every run reports one outcome). */
export class CountingMetrics extends WarmPoolMetrics {
  runs = 0;

  override reconciled(seconds: number, outcome: 'ok' | 'error' | 'skipped', at: number): void {
    this.runs++;
    super.reconciled(seconds, outcome, at);
  }
}

export class RunWorld {
  readonly pools = new ObjectStore<SandboxWarmPool>();
  readonly templates = new ObjectStore<SandboxTemplate>();
  readonly inventories = new WatchedStore<NodeInventory>();
  readonly nodes = new WatchedStore<KubeNode>();
  /** node → the targets its agent holds. */
  readonly held = new Map<string, readonly PoolTarget[]>();
  /** Agents whose calls fail while listed here. */
  readonly broken = new Set<string>();
  /** node → how many sandboxes each of its pools is short of its target (refilling). */
  readonly short = new Map<string, number>();
  readonly reconciler: WarmPoolReconciler;
  readonly #calls = new InFlight();
  readonly #metrics = new CountingMetrics(new Registry());
  readonly #leadership = new AbortController();
  #rv = 1000;

  constructor(clock: ManualClock, intervalMs: number) {
    const calls = this.#calls;
    const store = new MemoryEpochStore();
    const nodes = new Lister(this.nodes);
    this.reconciler = new WarmPoolReconciler({
      pools: new Lister(this.pools),
      templates: new Lister(this.templates),
      inventories: new Lister(this.inventories),
      addresses: () => addressCheckOf({ node: (name) => nodes.get(name) }),
      setter: {
        setPools: (node, _generation, pools) =>
          calls.track(async () => {
            if (this.broken.has(node.name)) throw new Error(`agent of ${node.name} is down`);
            this.held.set(node.name, pools);
            return this.#info(node.name);
          }),
        info: (node) =>
          calls.track(async () => {
            if (this.broken.has(node.name)) throw new Error(`agent of ${node.name} is down`);
            return this.#info(node.name);
          }),
        close: async () => undefined,
      },
      statusWriter: {
        write: (pool, status) =>
          calls.track(async () => {
            const updated = { ...pool, metadata: { ...pool.metadata, resourceVersion: String(++this.#rv) }, status };
            this.pools.upsert(updated);
            return { outcome: 'written' as const, object: updated };
          }),
      },
      events: { record: () => undefined, close: async () => undefined },
      generations: new GenerationSource({ advance: (minimum, signal, floor) => store.advance(minimum, signal, floor) }),
      token: () => 'fleet',
      metrics: this.#metrics,
      logger: silentLogger,
      clock,
      intervalMs,
      staleAfterMs: 90_000,
      failureThreshold: 2,
    });
    this.inventories.onChange = (name) => this.reconciler.noteNode(name);
    this.nodes.onChange = (name) => this.reconciler.noteNode(name);
  }

  drive(): void {
    this.reconciler.lead(this.#leadership.signal);
  }

  async settle(): Promise<void> {
    await this.#calls.quiet(() => this.#metrics.runs);
  }

  close(): Promise<void> {
    this.#leadership.abort();
    return this.reconciler.close();
  }

  /** node → what its agent holds, as `template=warm` in the order it was sent. */
  targets(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [node, pools] of [...this.held].sort(([a], [b]) => (a < b ? -1 : 1)))
      out[node] = pools
        .map((p) => `${p.template}=${p.warm}${p.warm_max === undefined ? '' : `/${p.warm_max}`}`)
        .join(',');
    return out;
  }

  /** pool → its status as written. */
  statuses(): Record<string, SandboxWarmPoolStatus | undefined> {
    const out: Record<string, SandboxWarmPoolStatus | undefined> = {};
    for (const pool of this.pools.list()) out[`${pool.metadata?.namespace}/${pool.metadata?.name}`] = pool.status;
    return out;
  }

  /** What the node's agent reports of its pools (its /v1/info, and its inventory's status.pools). */
  reported(node: string): NodeInfo['pools'] {
    const short = this.short.get(node) ?? 0;
    return (this.held.get(node) ?? []).map((p) => ({
      key: { template: p.template, net: p.net, size: p.size },
      target: p.warm,
      warm: Math.max(0, p.warm - short),
      refilling: Math.min(short, p.warm),
    }));
  }

  #info(node: string): NodeInfo {
    return { pools: this.reported(node), claimed: 0 };
  }
}

/** Where two worlds start: these templates (`img-<i>`), these nodes fresh, pools p0 (t0, 5) and p1 (t1, 3). */
export interface TwinStart {
  templates: readonly string[];
  nodes: readonly string[];
  /** Anything else a world needs before it drives (a refusing agent, say). */
  prepare?: (world: RunWorld) => void;
}

/**
 * The run's contract between resyncs: two worlds get the same events, one answering each batch with a plain poke (the
 * incremental run), the other with a full resync; after every batch both hold the same sets, statuses and node views.
 * An event of kind `time` moves the shared clock by its `ms` before `happen` applies it to each world.
 */
export async function expectIncrementalAsFull<E extends { kind: string }>(
  clock: ManualClock,
  start: TwinStart,
  runs: ReadonlyArray<readonly E[]>,
  happen: (world: RunWorld, event: E) => void,
): Promise<void> {
  const incremental = new RunWorld(clock, 30_000);
  const full = new RunWorld(clock, 30_000);
  const worlds = [incremental, full];
  for (const world of worlds) {
    start.prepare?.(world);
    start.templates.forEach((name, i) => world.templates.upsert(templateObject('ns', name, `img-${i}`)));
    for (const name of start.nodes) {
      world.inventories.upsert(inventoryObject(name, { publishedAt: clock.iso() }));
      world.nodes.upsert(kubeNodeObject(name));
    }
    world.pools.upsert(poolObject('ns', 'p0', 't0', 5));
    world.pools.upsert(poolObject('ns', 'p1', 't1', 3));
    world.drive();
  }
  try {
    await Promise.all(worlds.map((world) => world.settle()));
    for (const events of runs) {
      for (const event of events) {
        if (event.kind === 'time') clock.advance((event as unknown as { ms: number }).ms);
        for (const world of worlds) happen(world, event);
      }
      incremental.reconciler.poke('event');
      full.reconciler.pokeResync('event');
      for (const world of [...worlds, ...worlds]) await world.settle();
      expect(incremental.targets()).toEqual(full.targets());
      expect(incremental.statuses()).toEqual(full.statuses());
      expect(incremental.reconciler.nodes()).toEqual(full.reconciler.nodes());
    }
  } finally {
    await Promise.all(worlds.map((world) => world.close()));
  }
}
