// The warm-pool run's memos against what a full run computes, over random
// event sequences: the spread (pools scaled, added, removed; nodes in and out
// of placement; room moving) equals spread(pools, nodes, previous) of the chain
// of full runs; the summed observations equal observePools over the counting
// nodes; each node's desired set equals desiredSetOf. And the run as a whole:
// two reconcilers fed the same random events, one answering each with an
// incremental run, the other with a full resync, push the same sets to every
// node and write the same statuses.
import { inventoryPoolsOf, WARM_MAX_ANNOTATION, type InventoryPool } from '@warmpool/api';
import { infoOf, inventoryObject, ManualClock, poolObject, templateObject } from '@warmpool/harness';
import { observePools, spread, type PoolDemand, type SpreadNode, type Targets } from '@warmpool/pool-model';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DesiredSets, desiredSetOf } from '../../../src/controllers/warmpool/desired.js';
import { ObservedPools } from '../../../src/controllers/warmpool/observed.js';
import type { KeyDemand } from '../../../src/controllers/warmpool/plan.js';
import { IncrementalSpread } from '../../../src/controllers/warmpool/spread-memo.js';
import type { NodeView, Observation } from '../../../src/nodes/tracker.js';
import { NodeTracker } from '../../../src/nodes/tracker.js';
import { expectIncrementalAsFull, type RunWorld } from './run-world.js';

const POOL_IDS = ['a', 'b', 'c', 'd', 'e', 'f'];
const NODE_NAMES = ['n0', 'n1', 'n2', 'n3', 'n4', 'n5', 'n6', 'n7'];

type Event =
  | { kind: 'scale'; pool: number; replicas: number }
  | { kind: 'remove'; pool: number }
  | { kind: 'eligible'; node: number; eligible: boolean }
  | { kind: 'room'; node: number; room: number }
  | { kind: 'resync' }
  | { kind: 'nothing' };

const eventArb: fc.Arbitrary<Event> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('scale' as const),
      pool: fc.nat(POOL_IDS.length - 1),
      replicas: fc.nat(40),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), pool: fc.nat(POOL_IDS.length - 1) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('eligible' as const),
      node: fc.nat(NODE_NAMES.length - 1),
      eligible: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('room' as const),
      node: fc.nat(NODE_NAMES.length - 1),
      room: fc.oneof(fc.integer({ min: -2, max: 60 }), fc.constant(Number.POSITIVE_INFINITY)),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'resync' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'nothing' as const }) },
);

const worldArb = fc.record({
  pools: fc.array(fc.nat(30), { minLength: POOL_IDS.length, maxLength: POOL_IDS.length }),
  rooms: fc.array(fc.oneof(fc.integer({ min: 0, max: 80 }), fc.constant(Number.POSITIVE_INFINITY)), {
    minLength: NODE_NAMES.length,
    maxLength: NODE_NAMES.length,
  }),
  /** Targets the term begins from (what the nodes report), possibly off any ideal. */
  held: fc.array(fc.tuple(fc.nat(NODE_NAMES.length - 1), fc.nat(POOL_IDS.length - 1), fc.integer({ min: 1, max: 9 })), {
    maxLength: 12,
  }),
});

function heldTargets(held: ReadonlyArray<[number, number, number]>): Targets {
  const targets = new Map<string, Map<string, number>>();
  for (const [n, p, units] of held) {
    const name = NODE_NAMES[n] as string;
    const map = targets.get(name) ?? new Map<string, number>();
    map.set(POOL_IDS[p] as string, units);
    targets.set(name, map);
  }
  return targets;
}

describe('IncrementalSpread (properties)', () => {
  it('equals the full spread given its previous targets, after every run of any sequence of events', () => {
    fc.assert(
      // A run answers one to three events at once (pokes are coalesced): a scale-down and a scale-up in one run, say.
      fc.property(
        worldArb,
        fc.array(fc.array(eventArb, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 30 }),
        (world, runs) => {
          const replicas = new Map<string, number>(world.pools.map((r, i) => [POOL_IDS[i] as string, r]));
          const nodes = NODE_NAMES.map((name, i) => ({ name, room: world.rooms[i] as number, eligible: true }));
          const start = heldTargets(world.held);
          const incremental = new IncrementalSpread(start);
          let previous: Targets | undefined = start;
          for (const events of runs) {
            for (const event of events) {
              if (event.kind === 'scale') replicas.set(POOL_IDS[event.pool] as string, event.replicas);
              else if (event.kind === 'remove') replicas.delete(POOL_IDS[event.pool] as string);
              else if (event.kind === 'eligible')
                (nodes[event.node] as { eligible: boolean }).eligible = event.eligible;
              else if (event.kind === 'room') (nodes[event.node] as { room: number }).room = event.room;
              else if (event.kind === 'resync') incremental.resync();
            }
            const pools: PoolDemand[] = [...replicas].map(([id, r]) => ({ id, replicas: r }));
            const view: SpreadNode[] = nodes.map((node) => ({ ...node }));
            const full = spread(pools, view, previous);
            const fast = incremental.run(pools, view);
            expect(plain(fast.targets)).toEqual(plain(full.targets));
            expect(sorted(fast.placed)).toEqual(sorted(full.placed));
            expect(sorted(fast.unplaced)).toEqual(sorted(full.unplaced));
            previous = full.targets;
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('places nothing while no node is eligible, and everything again once one is', () => {
    const pools = [{ id: 'a', replicas: 3 }];
    const incremental = new IncrementalSpread();
    const none = [{ name: 'n0', room: 10, eligible: false }];
    for (let i = 0; i < 3; i++) expect(sorted(incremental.run(pools, none).unplaced)).toEqual([['a', 3]]);
    const one = [{ name: 'n0', room: 10 }];
    for (let i = 0; i < 3; i++) expect(sorted(incremental.run(pools, one).placed)).toEqual([['a', 3]]);
  });

  it('recomputes only the changed pool where room is plenty: a patch is not a full spread', () => {
    const nodes = NODE_NAMES.map((name) => ({ name, room: 1_000 }));
    const pools = POOL_IDS.map((id, i) => ({ id, replicas: 5 + i }));
    const runs: string[] = [];
    const incremental = new IncrementalSpread(undefined, (kind) => runs.push(kind));
    incremental.run(pools, nodes);
    incremental.run(pools, nodes);
    const scaled = pools.map((pool) => (pool.id === 'c' ? { ...pool, replicas: 40 } : pool));
    const result = incremental.run(scaled, nodes);
    // The first run meets the nodes (full); from then on only what changed is spread.
    expect(runs).toEqual(['full', 'incremental', 'incremental']);
    expect(plain(result.targets)).toEqual(plain(spread(scaled, nodes, spread(pools, nodes).targets).targets));
    // The periodic resync runs the full spread, keeps each node's map where its targets held, and moves on from it.
    incremental.resync();
    const resynced = incremental.run(scaled, nodes);
    for (const [node, held] of resynced.targets) expect(held).toBe(result.targets.get(node));
    const again = incremental.run(pools, nodes);
    expect(runs.slice(3)).toEqual(['full', 'incremental']);
    expect(plain(again.targets)).toEqual(plain(spread(pools, nodes, resynced.targets).targets));
  });
});

type NodeEvent =
  | { kind: 'report'; node: number; pools: Array<[number, number, number, number]> }
  | { kind: 'eligible'; node: number; eligible: boolean }
  | { kind: 'gone'; node: number }
  | { kind: 'nothing' };

const reportArb = fc.array(
  fc.tuple(
    fc.nat(POOL_IDS.length - 1),
    fc.integer({ min: -1, max: 9 }),
    fc.integer({ min: -1, max: 9 }),
    fc.integer({ min: -1, max: 3 }),
  ),
  { maxLength: 4 },
);

const nodeEventArb: fc.Arbitrary<NodeEvent> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('report' as const),
      node: fc.nat(NODE_NAMES.length - 1),
      pools: reportArb,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('eligible' as const),
      node: fc.nat(NODE_NAMES.length - 1),
      eligible: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('gone' as const), node: fc.nat(NODE_NAMES.length - 1) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'nothing' as const }) },
);

function observation(pools: Array<[number, number, number, number]>): Observation {
  const rows: InventoryPool[] = pools.map(([p, target, warm, refilling]) => ({
    template: POOL_IDS[p] as string,
    net: 'none',
    size: 'small',
    target,
    warm,
    refilling,
  }));
  return { pools: rows, claimed: 0, draining: false, atCapacity: false, at: 0, source: 'agent', reported: '' };
}

describe('ObservedPools (properties)', () => {
  it("equals observePools over the eligible nodes' observations after every event of any sequence", () => {
    fc.assert(
      fc.property(fc.array(nodeEventArb, { minLength: 1, maxLength: 50 }), (events) => {
        const views = new Map<string, { name: string; eligible: boolean; observation: Observation | undefined }>();
        const observed = new ObservedPools();
        for (const event of events) {
          if (event.kind === 'report') {
            const name = NODE_NAMES[event.node] as string;
            const before = views.get(name);
            views.set(name, { name, eligible: before?.eligible ?? true, observation: observation(event.pools) });
          } else if (event.kind === 'eligible') {
            const view = views.get(NODE_NAMES[event.node] as string);
            if (view !== undefined) view.eligible = event.eligible;
          } else if (event.kind === 'gone') views.delete(NODE_NAMES[event.node] as string);
          const now = [...views.values()].map((v) => ({ ...v }) as unknown as NodeView);
          const full = observePools(now.filter((v) => v.eligible).map((v) => v.observation));
          expect(sortedRows(observed.update(now))).toEqual(sortedRows(full));
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('DesiredSets (properties)', () => {
  it('equals desiredSetOf for every node, whether its targets are the same map or a new one', () => {
    const demandArb = fc.record({ warmMax: fc.option(fc.integer({ min: 1, max: 20 }), { nil: undefined }) });
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            node: fc.nat(NODE_NAMES.length - 1),
            fresh: fc.boolean(),
            held: fc.array(fc.tuple(fc.nat(POOL_IDS.length - 1), fc.integer({ min: 0, max: 9 })), { maxLength: 4 }),
            pools: fc.array(fc.option(demandArb, { nil: undefined }), {
              minLength: POOL_IDS.length,
              maxLength: POOL_IDS.length,
            }),
          }),
          { minLength: 1, maxLength: 40 },
        ),
        (steps) => {
          const sets = new DesiredSets();
          const maps = new Map<string, Map<string, number>>();
          for (const step of steps) {
            const name = NODE_NAMES[step.node] as string;
            if (step.fresh || !maps.has(name))
              maps.set(name, new Map(step.held.map(([p, warm]) => [POOL_IDS[p] as string, warm])));
            const demands = new Map<string, KeyDemand>();
            step.pools.forEach((demand, p) => {
              if (demand === undefined) return;
              const id = POOL_IDS[p] as string;
              const options = demand.warmMax === undefined ? {} : { warm_max: demand.warmMax };
              demands.set(id, { key: { template: id, net: 'none', size: 'small' }, replicas: 1, options });
            });
            sets.begin(demands);
            sets.prune(maps.keys());
            for (const [node, held] of maps) expect(sets.of(node, held, demands)).toEqual(desiredSetOf(held, demands));
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

function sortedRows<T>(rows: ReadonlyMap<string, T>): Array<[string, T]> {
  return [...rows].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Targets as sorted plain entries: equal targets, equal values, whatever the maps' insertion order. */
function plain(targets: Targets): Array<[string, Array<[string, number]>]> {
  return [...targets].map(([node, held]) => [node, sorted(held)] as [string, Array<[string, number]>]).sort(byKey);
}

function sorted(map: ReadonlyMap<string, number>): Array<[string, number]> {
  return [...map].sort(byKey);
}

function byKey<T extends [string, unknown]>(a: T, b: T): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
}

const RUN_POOLS = ['p0', 'p1', 'p2', 'p3'];
const RUN_TEMPLATES = ['t0', 't1', 't2'];
const RUN_NODES = ['n0', 'n1', 'n2', 'n3'];

type WorldEvent =
  | { kind: 'scale'; pool: number; replicas: number }
  | { kind: 'remove'; pool: number }
  | { kind: 'retemplate'; pool: number; template: number }
  | { kind: 'image'; template: number; image: number; warmMax: number | undefined }
  | { kind: 'publish'; node: number; capacity: number | undefined; claimed: number; draining: boolean }
  | { kind: 'gone'; node: number }
  | { kind: 'broken'; node: number; broken: boolean }
  | { kind: 'short'; node: number; short: number }
  | { kind: 'time'; ms: number };

const worldEventArb: fc.Arbitrary<WorldEvent> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('scale' as const),
      pool: fc.nat(RUN_POOLS.length - 1),
      replicas: fc.nat(12),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), pool: fc.nat(RUN_POOLS.length - 1) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('retemplate' as const),
      pool: fc.nat(RUN_POOLS.length - 1),
      template: fc.nat(RUN_TEMPLATES.length - 1),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('image' as const),
      template: fc.nat(RUN_TEMPLATES.length - 1),
      image: fc.nat(3),
      warmMax: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('publish' as const),
      node: fc.nat(RUN_NODES.length - 1),
      capacity: fc.option(fc.constantFrom(40, 60), { nil: undefined }),
      claimed: fc.nat(3),
      draining: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('gone' as const), node: fc.nat(RUN_NODES.length - 1) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('broken' as const),
      node: fc.nat(RUN_NODES.length - 1),
      broken: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('short' as const), node: fc.nat(RUN_NODES.length - 1), short: fc.nat(2) }),
  },
  // Past the agents' observation TTL (2 intervals) and the inventories' staleness (90 s) with no event at all.
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('time' as const), ms: fc.integer({ min: 0, max: 70_000 }) }) },
);

/** Applies `event` to a world's caches and agents. */
function happen(world: RunWorld, clock: ManualClock, event: WorldEvent): void {
  switch (event.kind) {
    case 'scale':
    case 'retemplate': {
      const name = RUN_POOLS[event.pool] as string;
      const before = world.pools.get(`ns/${name}`);
      const template =
        event.kind === 'retemplate'
          ? (RUN_TEMPLATES[event.template] as string)
          : (before?.spec?.sandboxTemplateRef?.name ?? (RUN_TEMPLATES[event.pool % RUN_TEMPLATES.length] as string));
      const replicas = event.kind === 'scale' ? event.replicas : (before?.spec?.replicas ?? 1);
      const generation = (before?.metadata?.generation ?? 0) + 1;
      const pool = poolObject('ns', name, template, replicas, { generation, resourceVersion: `g${generation}` });
      world.pools.upsert(before?.status === undefined ? pool : { ...pool, status: before.status });
      return;
    }
    case 'remove':
      world.pools.remove(`ns/${RUN_POOLS[event.pool] as string}`);
      return;
    case 'image': {
      const annotations: Record<string, string> =
        event.warmMax === undefined ? {} : { [WARM_MAX_ANNOTATION]: String(event.warmMax) };
      const name = RUN_TEMPLATES[event.template] as string;
      world.templates.upsert(templateObject('ns', name, `img-${event.image}`, { annotations }));
      return;
    }
    case 'publish': {
      const name = RUN_NODES[event.node] as string;
      const { capacity, claimed, draining } = event;
      const inventory = inventoryObject(name, {
        publishedAt: clock.iso(),
        claimed,
        draining,
        ...(capacity === undefined ? {} : { capacity }),
      });
      const pools = inventoryPoolsOf({ pools: world.reported(name), claimed: 0 });
      world.inventories.upsert({ ...inventory, status: { ...inventory.status, pools } });
      return;
    }
    case 'gone':
      world.inventories.remove(RUN_NODES[event.node] as string);
      return;
    case 'broken':
      if (event.broken) world.broken.add(RUN_NODES[event.node] as string);
      else world.broken.delete(RUN_NODES[event.node] as string);
      return;
    case 'short':
      world.short.set(RUN_NODES[event.node] as string, event.short);
      return;
    case 'time':
      return;
  }
}

describe('the run (properties)', () => {
  it('pushes the same sets and writes the same statuses as a full resync, after every run of any event sequence', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(worldEventArb, { minLength: 1, maxLength: 3 }), { maxLength: 12 }),
        async (runs) => {
          const clock = new ManualClock();
          await expectIncrementalAsFull(clock, { templates: RUN_TEMPLATES, nodes: RUN_NODES }, runs, (world, event) =>
            happen(world, clock, event),
          );
        },
      ),
      // The example: only time passes, beyond the agents' answers' TTL and then the inventories' staleness.
      { numRuns: 60, examples: [[[[{ kind: 'time', ms: 70_000 }], [{ kind: 'time', ms: 70_000 }]]]] },
    );
  }, 60_000);
});

type TrackerEvent =
  | { kind: 'publish'; node: number; applied: number | undefined; capacity: number | undefined; draining: boolean }
  | { kind: 'gone'; node: number }
  | { kind: 'answer'; node: number; target: number }
  | { kind: 'failure'; node: number }
  | { kind: 'refusal'; node: number; applied: number }
  | { kind: 'issued'; issued: number | undefined }
  | { kind: 'time'; ms: number };

const trackerEventArb: fc.Arbitrary<TrackerEvent> = fc.oneof(
  fc.record({
    kind: fc.constant('publish' as const),
    node: fc.nat(NODE_NAMES.length - 1),
    applied: fc.option(fc.nat(12), { nil: undefined }),
    capacity: fc.option(fc.nat(20), { nil: undefined }),
    draining: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('gone' as const), node: fc.nat(NODE_NAMES.length - 1) }),
  fc.record({ kind: fc.constant('answer' as const), node: fc.nat(NODE_NAMES.length - 1), target: fc.nat(5) }),
  fc.record({ kind: fc.constant('failure' as const), node: fc.nat(NODE_NAMES.length - 1) }),
  fc.record({ kind: fc.constant('refusal' as const), node: fc.nat(NODE_NAMES.length - 1), applied: fc.nat(12) }),
  // The issued generation moves up within a term, and down or to undefined between terms.
  fc.record({ kind: fc.constant('issued' as const), issued: fc.option(fc.nat(12), { nil: undefined }) }),
  fc.record({ kind: fc.constant('time' as const), ms: fc.integer({ min: 0, max: 40_000 }) }),
);

describe('NodeTracker views (properties)', () => {
  it("equal each node's view built afresh after every event, through syncs of only the nodes events named", () => {
    fc.assert(
      fc.property(fc.array(trackerEventArb, { minLength: 1, maxLength: 60 }), (events) => {
        const clock = new ManualClock();
        let issued: number | undefined = 6;
        const tracker = new NodeTracker({
          clock,
          staleAfterMs: 60_000,
          failureThreshold: 2,
          agentObservationTtlMs: 20_000,
          highestIssued: () => issued,
        });
        const inventories = new Map<string, ReturnType<typeof inventoryObject>>();
        const vouched = (): undefined => undefined;
        for (const event of events) {
          const name = 'node' in event ? (NODE_NAMES[event.node] as string) : '';
          if (event.kind === 'publish') {
            const { applied, capacity, draining } = event;
            inventories.set(
              name,
              inventoryObject(name, {
                publishedAt: clock.iso(),
                draining,
                ...(applied === undefined ? {} : { appliedGeneration: applied }),
                ...(capacity === undefined ? {} : { capacity }),
              }),
            );
          } else if (event.kind === 'gone') inventories.delete(name);
          else if (event.kind === 'answer') tracker.recordAnswer(name, infoOf({ 'img|none|small': event.target }));
          else if (event.kind === 'failure') tracker.recordFailure(name, new Error('down'));
          else if (event.kind === 'refusal') tracker.recordRefusal(name, event.applied);
          else if (event.kind === 'issued') issued = event.issued;
          else clock.advance(event.ms);
          if (event.kind === 'publish' || event.kind === 'gone')
            tracker.syncSome(
              [name],
              (n) => inventories.get(n),
              () => vouched,
            );
          const fresh = [...inventories.keys()].sort().map((n) => tracker.view(n));
          expect(tracker.views()).toEqual(fresh);
        }
      }),
      { numRuns: 300 },
    );
  });
});
