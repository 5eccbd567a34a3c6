// The reconciler against in-memory caches and a scripted PoolSetter: the
// decisions (who is pushed what, with which generation, when status is
// written) without any network. End to end is in driver.test.ts.
//
// World.settle() knows the reconciler has gone quiet from outside: between
// its collaborators' calls (agents, status writes, the epoch store, the Lease
// re-check), all tracked by an InFlight, and the work queue's setImmediate, a run
// is synchronous. It cannot see a real-time wait (the epoch backoff, the probe
// interval): tests that need one wait for its effect with vi.waitFor.
import type {
  KubeNode,
  NodeInfo,
  NodeInventory,
  PoolTarget,
  SandboxTemplate,
  SandboxWarmPool,
  SandboxWarmPoolStatus,
} from '@warmpool/api';
import { Lister, ObjectStore, type PinnedWrite } from '@warmpool/kube';
import { Registry } from 'prom-client';
import { silentLogger } from '@warmpool/runtime';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { StaleGenerationError } from '../../../src/agents/errors.js';
import type { AgentNode, PoolSetter } from '../../../src/agents/pool-setter.js';
import type { EventRecorder } from '../../../src/controllers/warmpool/events.js';
import { WarmPoolReconciler } from '../../../src/controllers/warmpool/reconciler.js';
import { fitStatus, type StatusFields } from '../../../src/controllers/warmpool/status-schema.js';
import type { PoolStatusWriter } from '../../../src/controllers/warmpool/status-writer.js';
import {
  generationOf,
  GenerationSource,
  MAX_EPOCH,
  MemoryEpochStore,
  type EpochStore,
} from '../../../src/generation/generation.js';
import { createHealthApp, registerBuildInfo } from '../../../src/http/health.js';
import { addressCheckOf } from '../../../src/nodes/addresses.js';
import { AgentCallError } from '../../../src/agents/errors.js';
import { CountingMetrics, WatchedStore } from './run-world.js';
import {
  appliedInfoOf,
  InFlight,
  inventoryObject,
  kubeNodeObject,
  ManualClock,
  poolObject,
  templateObject,
} from '@warmpool/harness';

interface Push {
  node: string;
  generation: number;
  pools: string;
}

type Behaviour = (call: {
  node: AgentNode;
  generation: number;
  pools: readonly PoolTarget[];
  signal?: AbortSignal;
}) => Promise<NodeInfo>;

/** Agents in memory: each applies what it is sent, unless a behaviour says otherwise. */
class FakeAgents implements PoolSetter {
  readonly pushes: Push[] = [];
  readonly held = new Map<string, readonly PoolTarget[]>();
  readonly behaviours = new Map<string, Behaviour>();
  /** Every address a push or a probe went to. */
  readonly called = new Set<string>();
  probes = 0;

  async setPools(
    node: AgentNode,
    generation: number,
    pools: readonly PoolTarget[],
    options: { signal?: AbortSignal } = {},
  ): Promise<NodeInfo> {
    this.called.add(node.address);
    this.pushes.push({ node: node.name, generation, pools: pools.map((p) => `${p.template}=${p.warm}`).join(',') });
    const behaviour = this.behaviours.get(node.name);
    if (behaviour !== undefined)
      return behaviour({ node, generation, pools, ...(options.signal ? { signal: options.signal } : {}) });
    this.held.set(node.name, pools);
    return this.info(node);
  }

  async info(node: AgentNode): Promise<NodeInfo> {
    this.called.add(node.address);
    this.probes++;
    return appliedInfoOf(this.held.get(node.name) ?? []);
  }

  pushedTo(node: string): Push[] {
    return this.pushes.filter((p) => p.node === node);
  }

  async close(): Promise<void> {}
}

/** Writes land in the cache at once, as a watch would deliver them. */
class FakeStatusWriter implements PoolStatusWriter {
  readonly writes: Array<{ ref: string; status: SandboxWarmPoolStatus }> = [];
  readonly store: ObjectStore<SandboxWarmPool>;
  /** The status fields the pools' schema declares. */
  fields: StatusFields = 'any';
  #rv = 100;

  constructor(store: ObjectStore<SandboxWarmPool>) {
    this.store = store;
  }

  fit(status: SandboxWarmPoolStatus): SandboxWarmPoolStatus {
    return fitStatus(status, this.fields);
  }

  async write(pool: SandboxWarmPool, status: SandboxWarmPoolStatus): Promise<PinnedWrite<SandboxWarmPool>> {
    this.writes.push({ ref: `${pool.metadata.namespace}/${pool.metadata.name}`, status });
    const updated = { ...pool, metadata: { ...pool.metadata, resourceVersion: String(++this.#rv) }, status };
    this.store.upsert(updated);
    return { outcome: 'written', object: updated };
  }
}

/** Events kept in memory. */
class RecordedEvents implements EventRecorder {
  readonly events: Array<{ name: string; type: string; reason: string; message: string }> = [];

  record(
    object: { metadata?: { name?: string } },
    _type: unknown,
    type: string,
    reason: string,
    message: string,
  ): void {
    this.events.push({ name: object.metadata?.name ?? '', type, reason, message });
  }

  async close(): Promise<void> {}
}

class World {
  readonly pools = new ObjectStore<SandboxWarmPool>();
  readonly templates = new ObjectStore<SandboxTemplate>();
  /** Each change names its node to the reconciler, as the watch wiring does. */
  readonly inventories = new WatchedStore<NodeInventory>();
  /** The Node objects, each vouching for its inventory's default address. */
  readonly nodes = new WatchedStore<KubeNode>();
  readonly agents = new FakeAgents();
  readonly statuses = new FakeStatusWriter(this.pools);
  readonly clock = new ManualClock();
  readonly store: EpochStore;
  readonly generations: GenerationSource;
  token: string | undefined = 'fleet';
  readonly reconciler: WarmPoolReconciler;
  readonly leadership = new AbortController();
  readonly events = new RecordedEvents();
  /** What the election says: holding() (within the renew deadline) and what a re-read of the Lease finds. */
  holding = true;
  leaseHolder = 'us';
  confirms = 0;
  readonly metrics = new CountingMetrics(new Registry());
  /** Every call the reconciler makes to the fakes below, so settle() can tell when it has gone quiet. */
  readonly calls = new InFlight();

  constructor(options: { nodes?: number; intervalMs?: number; store?: EpochStore } = {}) {
    const { calls } = this;
    const store = options.store ?? new MemoryEpochStore();
    this.store = store;
    this.generations = new GenerationSource({
      advance: (minimum, signal, floor) => calls.track(() => store.advance(minimum, signal, floor)),
    });
    for (let i = 0; i < (options.nodes ?? 3); i++) {
      const name = `node-${String.fromCharCode(97 + i)}`;
      this.inventories.upsert(inventoryObject(name, { publishedAt: this.clock.iso() }));
      this.nodes.upsert(kubeNodeObject(name));
    }
    const nodes = new Lister(this.nodes);
    this.templates.upsert(templateObject('ns', 'tpl', 'img'));
    this.inventories.onChange = (name) => this.reconciler.noteNode(name);
    this.nodes.onChange = (name) => this.reconciler.noteNode(name);
    this.reconciler = new WarmPoolReconciler({
      pools: new Lister(this.pools),
      templates: new Lister(this.templates),
      inventories: new Lister(this.inventories),
      addresses: () => addressCheckOf({ node: (name) => nodes.get(name) }),
      // Each call goes to the fake's method as it is at call time: a test may replace one.
      setter: {
        setPools: (node, generation, pools, options) =>
          calls.track(() => this.agents.setPools(node, generation, pools, options)),
        info: (node) => calls.track(() => this.agents.info(node)),
        close: () => this.agents.close(),
      },
      statusWriter: {
        write: (pool, status) => calls.track(() => this.statuses.write(pool, status)),
        fit: (status) => this.statuses.fit(status),
      },
      events: this.events,
      generations: this.generations,
      leadership: {
        holding: () => this.holding,
        confirm: () =>
          calls.track(async () => {
            this.confirms++;
            if (this.leaseHolder === 'us') return true;
            this.leadership.abort();
            return false;
          }),
      },
      token: () => this.token,
      metrics: this.metrics,
      logger: silentLogger,
      clock: this.clock,
      intervalMs: options.intervalMs ?? 3_600_000,
      staleAfterMs: 90_000,
    });
  }

  drive(): void {
    this.reconciler.lead(this.leadership.signal);
  }

  /** Until no call to a fake is in flight and no run or call has started for a few turns. */
  async settle(): Promise<void> {
    await this.calls.quiet(() => this.metrics.runs);
  }

  async change(reason: string, mutate: () => void): Promise<void> {
    mutate();
    this.reconciler.poke(reason);
    await this.settle();
  }

  targets(): Record<string, string> {
    return Object.fromEntries(
      [...this.agents.held].map(([node, pools]) => [node, pools.map((p) => `${p.template}=${p.warm}`).join(',')]),
    );
  }
}

describe('WarmPoolReconciler', () => {
  const worlds: World[] = [];
  const world = (options?: ConstructorParameters<typeof World>[0]): World => {
    const w = new World(options);
    worlds.push(w);
    return w;
  };

  afterEach(async () => {
    vi.useRealTimers();
    await Promise.all(worlds.splice(0).map((w) => w.reconciler.close()));
  });

  it('pushes every node its share, then nothing more while nothing changes', async () => {
    const w = world();
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 6));
    w.drive();
    await w.settle();
    expect(w.targets()).toEqual({ 'node-a': 'img=2', 'node-b': 'img=2', 'node-c': 'img=2' });
    expect(new Set(w.agents.pushes.map((p) => p.generation))).toEqual(new Set([generationOf(1, 0)]));

    const pushed = w.agents.pushes.length;
    for (let i = 0; i < 5; i++) w.reconciler.poke('resync');
    await w.settle();
    expect(w.agents.pushes).toHaveLength(pushed);
  });

  it('pushes only the nodes whose set changed, with a higher generation', async () => {
    const w = world();
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 6));
    w.drive();
    await w.settle();
    const before = w.agents.pushes.length;
    await w.change('pool changed', () => w.pools.upsert(poolObject('ns', 'pool', 'tpl', 7, { generation: 2 })));
    const round = w.agents.pushes.slice(before);
    expect(round).toHaveLength(1);
    expect(round[0]?.pools).toBe('img=3');
    expect(round[0]?.generation).toBe(generationOf(1, 1));
  });

  it("drains a deleted pool by leaving its key out of every node's set", async () => {
    const w = world();
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 3));
    w.drive();
    await w.settle();
    await w.change('pool deleted', () => w.pools.remove('ns/pool'));
    expect(w.targets()).toEqual({ 'node-a': '', 'node-b': '', 'node-c': '' });
  });

  it('re-pushes a node whose own report contradicts what it acknowledged (its sandboxd restarted)', async () => {
    const w = world({ intervalMs: 20 });
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 3));
    w.drive();
    await w.settle();
    const before = w.agents.pushedTo('node-b').length;
    w.agents.held.set('node-b', []);
    w.clock.advance(1);
    await vi.waitFor(() => expect(w.agents.pushedTo('node-b').length).toBe(before + 1), { timeout: 2_000 });
    await w.settle();
    expect(w.targets()['node-b']).toBe('img=1');
  });

  it('takes a node out of placement, with an Event, when its 409 names a generation no leader issued; the epoch stays', async () => {
    const store = new MemoryEpochStore();
    const w = world({ store });
    const forged = Number.MAX_SAFE_INTEGER;
    w.agents.behaviours.set('node-b', async ({ node, generation }) => {
      throw new StaleGenerationError(node.name, generation, forged);
    });
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 6));
    w.drive();
    await w.settle();
    await vi.waitFor(() => expect(w.confirms).toBe(1));
    await w.change('resync', () => undefined);
    expect(w.agents.pushedTo('node-b')).toHaveLength(1);
    expect(store.writes).toBe(1);
    expect(w.reconciler.driving).toBe(true);
    expect(w.reconciler.nodes().find((v) => v.name === 'node-b')?.exclusion).toBe('impossible-generation');
    expect(w.targets()).toMatchObject({ 'node-a': 'img=3', 'node-c': 'img=3' });
    const event = w.events.events.find((e) => e.name === 'node-b' && e.reason === 'NodeLeftPlacement');
    expect(event?.type).toBe('Warning');
    expect(event?.message).toContain(`reports applied generation ${forged}`);
    expect(event?.message).toContain(
      `kubectl annotate nodeinventory node-b warmpool.dev/reset-applied-generation=${forged}`,
    );
  });

  it("ends its term, rather than taking a higher epoch, when a 409 comes from a later leader's push", async () => {
    const store = new MemoryEpochStore();
    const w = world({ store });
    w.agents.behaviours.set('node-b', async ({ node, generation }) => {
      // The standby took the Lease and pushed under the next epoch.
      w.leaseHolder = 'them';
      throw new StaleGenerationError(node.name, generation, generationOf(2, 0));
    });
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 6));
    w.drive();
    await vi.waitFor(() => expect(w.reconciler.driving).toBe(false));
    expect(w.confirms).toBe(1);
    expect(store.writes).toBe(1);
    expect(w.agents.pushes.every((p) => p.generation === generationOf(1, 0))).toBe(true);
  });

  it('ignores a 409 naming a later generation of its own (its newer push got there first)', async () => {
    const w = world();
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 3));
    w.drive();
    await w.settle();
    const later = w.generations.last as number;
    w.agents.behaviours.set('node-b', async ({ node, generation }) => {
      throw new StaleGenerationError(node.name, generation, later);
    });
    await w.change('pool changed', () => w.pools.upsert(poolObject('ns', 'pool', 'tpl', 6, { generation: 2 })));
    expect(w.confirms).toBe(0);
    expect(w.reconciler.nodes().every((v) => v.exclusion === undefined)).toBe(true);
  });

  it('pushes nothing while past its renew deadline (a paused leader that resumed)', async () => {
    const w = world();
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 3));
    w.drive();
    await w.settle();
    const pushed = w.agents.pushes.length;
    w.holding = false;
    await w.change('pool changed', () => w.pools.upsert(poolObject('ns', 'pool', 'tpl', 9, { generation: 2 })));
    expect(w.agents.pushes).toHaveLength(pushed);
  });

  it('starts a term above what a majority of the inventories show applied; one forged number moves nothing but its node', async () => {
    const store = new MemoryEpochStore();
    const w = world({ store });
    w.inventories.upsert(
      inventoryObject('node-a', { publishedAt: w.clock.iso(), appliedGeneration: generationOf(8, 3) }),
    );
    w.inventories.upsert(
      inventoryObject('node-b', { publishedAt: w.clock.iso(), appliedGeneration: generationOf(8, 3) }),
    );
    w.inventories.upsert(
      inventoryObject('node-c', { publishedAt: w.clock.iso(), appliedGeneration: Number.MAX_SAFE_INTEGER }),
    );
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 4));
    w.drive();
    await w.settle();
    await w.change('resync', () => undefined);
    expect(store.epoch).toBe(9);
    expect(new Set(w.agents.pushes.map((p) => p.generation))).toEqual(new Set([generationOf(9, 0)]));
    expect(w.targets()).toEqual({ 'node-a': 'img=2', 'node-b': 'img=2' });
    expect(w.reconciler.nodes().map((v) => v.exclusion)).toEqual([undefined, undefined, 'impossible-generation']);
    expect(w.events.events.some((e) => e.name === 'node-c' && e.reason === 'NodeLeftPlacement')).toBe(true);
  });

  it("in a one-node fleet, a forged number in the one inventory takes that node out, not the leader's epochs or readiness", async () => {
    const store = new MemoryEpochStore();
    store.epoch = 4;
    const w = world({ store, nodes: 1 });
    w.inventories.upsert(
      inventoryObject('node-a', { publishedAt: w.clock.iso(), appliedGeneration: Number.MAX_SAFE_INTEGER }),
    );
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 2));
    w.drive();
    await w.settle();
    await w.change('resync', () => undefined);
    expect(store.epoch).toBe(5);
    expect(w.reconciler.notReadyReasons()).toEqual([]);
    expect(w.reconciler.nodes().map((v) => v.exclusion)).toEqual(['impossible-generation']);
    // The recovery in the README brings it back under the same leader, without a restart.
    await w.change('node changed', () =>
      w.inventories.upsert(inventoryObject('node-a', { publishedAt: w.clock.iso(), appliedGeneration: 0 })),
    );
    await w.change('resync', () => undefined);
    expect(w.targets()).toEqual({ 'node-a': 'img=2' });
  });

  it('in a one-node fleet whose epoch record was lost (the Lease deleted), starts above what that node applied', async () => {
    const store = new MemoryEpochStore();
    const w = world({ store, nodes: 1 });
    w.inventories.upsert(
      inventoryObject('node-a', { publishedAt: w.clock.iso(), appliedGeneration: generationOf(8, 3) }),
    );
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 2));
    w.drive();
    await w.settle();
    expect(store.epoch).toBe(9);
    expect(w.targets()).toEqual({ 'node-a': 'img=2' });
  });

  it('takes a node back once its inventory reports a plausible generation again (after the recovery)', async () => {
    const w = world();
    w.inventories.upsert(
      inventoryObject('node-c', { publishedAt: w.clock.iso(), appliedGeneration: Number.MAX_SAFE_INTEGER }),
    );
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 4));
    w.drive();
    await w.settle();
    await w.change('resync', () => undefined);
    expect(w.reconciler.inPlacement('node-c')).toBe(false);
    await w.change('node changed', () =>
      w.inventories.upsert(inventoryObject('node-c', { publishedAt: w.clock.iso() })),
    );
    await w.change('resync', () => undefined);
    expect(w.reconciler.inPlacement('node-c')).toBe(true);
    expect(w.targets()['node-c']).toBeDefined();
  });

  it('reports not ready and backs off, without spinning, when no generation is left', async () => {
    const store = new MemoryEpochStore();
    store.epoch = MAX_EPOCH;
    const w = world({ store, intervalMs: 50 });
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 3));
    w.drive();
    await vi.waitFor(() => expect(w.reconciler.notReadyReasons().join(' ')).toContain('no generation left'));
    const runs = w.metrics.runs;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    // The periodic sample (every 50 ms) runs; nothing else does.
    expect(w.metrics.runs - runs).toBeLessThan(60);
    expect(store.writes).toBe(0);
    expect(w.agents.pushes).toEqual([]);
  });

  it('keeps trying to take an epoch while the record cannot be written, and pushes nothing meanwhile', async () => {
    vi.useFakeTimers();
    let failures = 2;
    const flaky: EpochStore = {
      advance: async (minimum) => {
        if (failures-- > 0) throw new Error('apiserver unavailable');
        return minimum;
      },
    };
    const w = world({ store: flaky });
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 3));
    w.drive();
    await vi.advanceTimersByTimeAsync(50);
    expect(w.agents.pushes).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(w.agents.pushes).toHaveLength(3);
  });

  it("never calls an address the node's Node object does not vouch for: its share moves to the others until it points back", async () => {
    const w = world({ intervalMs: 20 });
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 6));
    w.drive();
    await w.settle();
    const forged = '127.0.9.9:7443';
    await w.change('node changed', () => {
      // node-b re-pointed by someone holding an agent token, and a node that does not exist, claiming room for 100 000.
      w.inventories.upsert(inventoryObject('node-b', { publishedAt: w.clock.iso(), address: forged }));
      w.inventories.upsert(
        inventoryObject('fake-node', { publishedAt: w.clock.iso(), address: forged, capacity: 100_000 }),
      );
    });
    expect(w.targets()).toMatchObject({ 'node-a': 'img=3', 'node-c': 'img=3' });
    const probes = w.agents.probes;
    await vi.waitFor(() => expect(w.agents.probes).toBeGreaterThan(probes + 4), { timeout: 5_000 });
    await w.settle();
    expect([...w.agents.called]).not.toContain(forged);
    expect(w.agents.pushedTo('fake-node')).toEqual([]);
    expect(
      w.reconciler
        .nodes()
        .filter((v) => !v.eligible)
        .map((v) => [v.name, v.exclusion, v.addressProblem]),
    ).toEqual([
      ['fake-node', 'unverified-address', 'there is no Node named fake-node to vouch for 127.0.9.9'],
      ['node-b', 'unverified-address', "127.0.9.9 is not one of Node node-b's addresses (node-b.test)"],
    ]);
    expect(await w.metrics.registry.metrics()).toContain('warmpool_controlplane_nodes{state="unverified_address"} 2');

    await w.change('node changed', () =>
      w.inventories.upsert(inventoryObject('node-b', { publishedAt: w.clock.iso(1) })),
    );
    expect(w.targets()).toMatchObject({ 'node-a': 'img=2', 'node-b': 'img=2', 'node-c': 'img=2' });
  });

  it('writes only the status fields the schema declares, and does not write again while they stand', async () => {
    const w = world();
    w.statuses.fields = new Set(['replicas', 'readyReplicas', 'selector']);
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 3));
    w.drive();
    await w.settle();
    const last = w.statuses.writes.at(-1)?.status;
    expect(last).toEqual({ replicas: 3, readyReplicas: 3, selector: 'warmpool.dev/pool=pool' });
    const writes = w.statuses.writes.length;
    for (let i = 0; i < 3; i++) await w.change('resync', () => undefined);
    expect(w.statuses.writes).toHaveLength(writes);

    // The CRD now declares conditions: they are written without anything else changing.
    w.statuses.fields = 'any';
    // As the driver's CRD watch does (driver.ts): a schema change makes the next run a full resync.
    w.reconciler.pokeResync('status schema changed');
    await w.settle();
    expect(w.statuses.writes.at(-1)?.status.conditions?.map((c) => [c.type, c.status])).toEqual([
      ['Ready', 'True'],
      ['Degraded', 'False'],
    ]);
  });

  it('writes no status at all where the schema holds none of its fields', async () => {
    const w = world();
    w.statuses.fields = new Set();
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 3));
    w.drive();
    await w.settle();
    for (let i = 0; i < 3; i++) await w.change('resync', () => undefined);
    expect(w.statuses.writes).toEqual([]);
    expect(w.targets()).toMatchObject({ 'node-a': 'img=1', 'node-b': 'img=1', 'node-c': 'img=1' });
  });

  it("moves a failing node's share to the others", async () => {
    const w = world();
    w.agents.behaviours.set('node-c', async ({ node }) => {
      throw new AgentCallError(node.name, 'unreachable', { retriable: true });
    });
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 6));
    w.drive();
    await w.settle();
    // Each failed push is retried on the next run until the threshold takes the node out.
    for (let i = 0; i < 3; i++) await w.change('retry', () => undefined);
    expect(w.agents.pushedTo('node-c')).toHaveLength(3);
    expect(w.targets()).toEqual({ 'node-a': 'img=3', 'node-b': 'img=3' });
    expect(w.reconciler.nodes().map((v) => v.exclusion)).toEqual([undefined, undefined, 'failing']);
  });

  it("passes no verdict on an inventory its agent has not written yet: its first publish is no node's return", async () => {
    const w = world();
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 6));
    w.drive();
    await w.settle();
    // The agent creates its NodeInventory, then writes its status a moment later.
    await w.change('node changed', () => {
      w.nodes.upsert(kubeNodeObject('node-d'));
      w.inventories.upsert(inventoryObject('node-d'));
    });
    await w.change('node changed', () =>
      w.inventories.upsert(inventoryObject('node-d', { publishedAt: w.clock.iso() })),
    );
    expect(w.events.events.filter((e) => e.name === 'node-d')).toEqual([]);
    expect(w.reconciler.nodes().find((v) => v.name === 'node-d')?.exclusion).toBeUndefined();
  });

  it("moves a stale node's share to the others, and back once it republishes", async () => {
    const w = world();
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 6));
    w.drive();
    await w.settle();
    w.clock.advance(60_000);
    for (const name of ['node-a', 'node-b'])
      w.inventories.upsert(inventoryObject(name, { publishedAt: w.clock.iso() }));
    w.clock.advance(31_000);
    await w.change('periodic', () => undefined);
    expect(w.targets()).toMatchObject({ 'node-a': 'img=3', 'node-b': 'img=3' });
    await w.change('node changed', () =>
      w.inventories.upsert(inventoryObject('node-c', { publishedAt: w.clock.iso() })),
    );
    expect(w.targets()).toEqual({ 'node-a': 'img=2', 'node-b': 'img=2', 'node-c': 'img=2' });
  });

  it('stops pushing the moment leadership ends, aborting the call in flight', async () => {
    const w = world();
    let aborted = false;
    w.agents.behaviours.set(
      'node-a',
      ({ signal }) =>
        new Promise((_, reject) => {
          signal?.addEventListener('abort', () => {
            aborted = true;
            reject(new Error('aborted'));
          });
        }),
    );
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 3));
    w.drive();
    await vi.waitFor(() => expect(w.agents.pushedTo('node-a')).toHaveLength(1));
    w.leadership.abort();
    expect(aborted).toBe(true);
    expect(w.reconciler.driving).toBe(false);
    const pushed = w.agents.pushes.length;
    await w.change('pool changed', () => w.pools.upsert(poolObject('ns', 'pool', 'tpl', 9, { generation: 2 })));
    expect(w.agents.pushes).toHaveLength(pushed);
  });

  it("writes a pool's status only when it changed", async () => {
    const w = world();
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 3));
    w.drive();
    await w.settle();
    const writes = w.statuses.writes.length;
    expect(writes).toBeGreaterThan(0);
    expect(w.pools.get('ns/pool')?.status).toMatchObject({ replicas: 3, readyReplicas: 3 });
    for (let i = 0; i < 5; i++) await w.change('resync', () => w.clock.advance(1_000));
    expect(w.statuses.writes).toHaveLength(writes);
  });

  it('writes no status for pools it does not drive', async () => {
    const w = world();
    w.templates.upsert(templateObject('ns', 'theirs', 'img', { optIn: false }));
    w.pools.upsert(poolObject('ns', 'pool', 'theirs', 3));
    w.drive();
    await w.settle();
    expect(w.statuses.writes).toEqual([]);
    expect(w.agents.pushes.every((p) => p.pools === '')).toBe(true);
  });

  it('pushes, probes and writes nothing without a fleet token', async () => {
    const w = world({ intervalMs: 20 });
    w.token = undefined;
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 3));
    w.drive();
    await new Promise((resolve) => setTimeout(resolve, 100));
    await w.settle();
    expect(w.agents.pushes).toEqual([]);
    expect(w.agents.probes).toBe(0);
    expect(w.statuses.writes).toEqual([]);
  });

  it('reconciles once when a round of pushes has settled, not once per answer', async () => {
    const w = world({ nodes: 20 });
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 20));
    w.drive();
    await w.settle();
    const runs = w.metrics.runs;
    await w.change('pool changed', () => w.pools.upsert(poolObject('ns', 'pool', 'tpl', 40, { generation: 2 })));
    expect(Object.values(w.targets())).toEqual(Array(20).fill('img=2'));
    // The poke, then one run for the 20 answers.
    expect(w.metrics.runs - runs).toBe(2);
  });

  it('tells how long each run waited after the change it answers', async () => {
    const w = world();
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 3));
    w.drive();
    await w.settle();
    const waits = async () =>
      (await w.metrics.registry.metrics())
        .split('\n')
        .find((l) => l.startsWith('warmpool_controlplane_reconcile_queue_wait_seconds_count'));
    const before = await waits();
    await w.change('pool changed', () => w.pools.upsert(poolObject('ns', 'pool', 'tpl', 6, { generation: 2 })));
    expect(before).toMatch(/ [1-9]\d*$/);
    expect(await waits()).not.toBe(before);
  });

  it('times the run answering a pool change from its event to its start, its round handed out and its end', async () => {
    const w = world({ nodes: 3 });
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 3));
    w.drive();
    await w.settle();
    const answered = async () => {
      const lines = (await w.metrics.registry.metrics()).split('\n');
      const count = (stage: string) =>
        Number(
          lines
            .find((l) => l.startsWith(`warmpool_controlplane_pool_change_answer_seconds_count{stage="${stage}"}`))
            ?.split(' ')[1] ?? 0,
        );
      return { run_start: count('run_start'), handed_out: count('handed_out'), run_end: count('run_end') };
    };
    const before = await answered();

    // A node's change pokes runs, but answers no pool change: nothing is observed.
    await w.change('node changed', () => undefined);
    expect(await answered()).toEqual(before);

    // One pool change, one run answering it: each stage observed once, the round with it.
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 6, { generation: 2 }));
    w.reconciler.pokeSpec('pool changed');
    await w.settle();
    expect(await answered()).toEqual({
      run_start: before.run_start + 1,
      handed_out: before.handed_out + 1,
      run_end: before.run_end + 1,
    });

    // A pool change that moves no node's set (its replicas back where the nodes already are): no round to hand out.
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 6, { generation: 3 }));
    w.reconciler.pokeSpec('pool changed');
    await w.settle();
    expect(await answered()).toEqual({
      run_start: before.run_start + 2,
      handed_out: before.handed_out + 1,
      run_end: before.run_end + 2,
    });
  });

  it("pushes a change while an earlier run's status writes still wait for the apiserver", async () => {
    const w = world();
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 3));
    w.drive();
    await w.settle();
    let release: (() => void) | undefined;
    const write = w.statuses.write.bind(w.statuses);
    w.statuses.write = async (pool, status) => {
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      return write(pool, status);
    };
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 6, { generation: 2 }));
    w.reconciler.poke('pool changed');
    await vi.waitFor(() => expect(release).toBeDefined());
    const before = w.agents.pushes.length;
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 9, { generation: 3 }));
    w.reconciler.poke('pool changed');
    await vi.waitFor(() =>
      expect(w.agents.pushes.slice(before).map((p) => p.pools)).toEqual(['img=3', 'img=3', 'img=3']),
    );
    w.statuses.write = write;
    release?.();
    await w.settle();
    expect(w.targets()).toEqual({ 'node-a': 'img=3', 'node-b': 'img=3', 'node-c': 'img=3' });
  });

  it("reports each pool's ready and desired replicas as gauges, and drops a deleted pool's series", async () => {
    const w = world();
    const series = async () =>
      (await w.metrics.registry.metrics()).split('\n').filter((l) => l.startsWith('warmpool_controlplane_pool_'));
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 6));
    w.drive();
    await w.settle();
    w.reconciler.poke('sample');
    await w.settle();
    expect(await series()).toEqual(
      expect.arrayContaining([
        'warmpool_controlplane_pool_ready_replicas{pool_namespace="ns",pool="pool"} 6',
        'warmpool_controlplane_pool_desired_replicas{pool_namespace="ns",pool="pool"} 6',
      ]),
    );
    await w.change('pool deleted', () => w.pools.remove('ns/pool'));
    expect(await series()).toEqual([]);
  });

  it('drops the pool series and zeroes the placement gauges when it stops leading: a standby reports none of them', async () => {
    const w = world();
    const lines = async () =>
      (await w.metrics.registry.metrics())
        .split('\n')
        .filter((l) => /^warmpool_controlplane_(pool_|unplaced_replicas |degraded_pools )/.test(l));
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 6));
    w.drive();
    await w.settle();
    w.metrics.placement(7, 2); // whatever the leader's last run found unplaced
    expect(await lines()).toEqual(
      expect.arrayContaining(['warmpool_controlplane_unplaced_replicas 7', 'warmpool_controlplane_degraded_pools 2']),
    );
    w.leadership.abort();
    expect(await lines()).toEqual([
      'warmpool_controlplane_unplaced_replicas 0',
      'warmpool_controlplane_degraded_pools 0',
    ]);
  });

  it('measures how long the loop has gone without finishing a run while it drives, so liveness catches a wedged loop', async () => {
    const w = world({ intervalMs: 20 });
    w.pools.upsert(poolObject('ns', 'pool', 'tpl', 3));
    expect(w.reconciler.stalledMs(), 'a standby is never stalled').toBeUndefined();
    w.drive();
    await w.settle();
    expect(w.reconciler.stalledMs()).toBe(0);
    w.clock.advance(60_000);
    await vi.waitFor(() => expect(w.reconciler.stalledMs()).toBe(0), { timeout: 5_000 });

    // Probes that never answer: the periodic sample never settles, so no run follows it.
    w.agents.info = () => new Promise<NodeInfo>(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 100));
    w.clock.advance(300_000);
    expect(w.reconciler.stalledMs()).toBeGreaterThanOrEqual(300_000);

    w.leadership.abort();
    expect(w.reconciler.stalledMs(), 'stepping down ends the measure').toBeUndefined();
  });
});

describe('the health endpoints', () => {
  it('answers /healthz 503 with a reason while the loop is wedged, and ok otherwise; /metrics only where asked', async () => {
    let wedged = false;
    const options = {
      notReadyReasons: () => [],
      notLiveReasons: () => (wedged ? ['no reconcile finished for 300 s'] : []),
    };
    const probes = createHealthApp(options);
    expect((await probes.request('/healthz')).status).toBe(200);
    wedged = true;
    const res = await probes.request('/healthz');
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({
      reason: 'ReconcileStalled',
      reasons: ['no reconcile finished for 300 s'],
    });
    expect((await probes.request('/metrics')).status).toBe(404);
    const registry = new Registry();
    registerBuildInfo(registry, undefined);
    const withMetrics = createHealthApp({ ...options, metrics: registry });
    const metrics = await (await withMetrics.request('/metrics')).text();
    expect(metrics).toMatch(/^warmpool_build_info\{component="control-plane",version="unknown",node_version="v\d+/m);
  });
});
