// Review: a resync asked for while no run can answer it (no leadership term, or no fleet token) must not be lost.
// The status schema watch asks for one (driver.ts: pokeResync('status schema changed')) because the status lane skips
// statuses it already found equal (same status object, resourceVersion and write memory) and only a resync compares
// them again with the new schema's fit.
import type { NodeInventory, SandboxTemplate, SandboxWarmPool, SandboxWarmPoolStatus } from '@warmpool/api';
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
import { silentLogger } from '@warmpool/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { WarmPoolReconciler } from '../../../src/controllers/warmpool/reconciler.js';
import { fitStatus, type StatusFields } from '../../../src/controllers/warmpool/status-schema.js';
import { GenerationSource, MemoryEpochStore } from '../../../src/generation/generation.js';
import { addressCheckOf } from '../../../src/nodes/addresses.js';
import { CountingMetrics, WatchedStore } from './run-world.js';

describe('a resync asked for while no run can answer it', () => {
  it('is answered by the first run that can: a status schema change while not leading reaches the statuses', async () => {
    const clock = new ManualClock();
    const pools = new ObjectStore<SandboxWarmPool>();
    const templates = new ObjectStore<SandboxTemplate>();
    const inventories = new WatchedStore<NodeInventory>();
    const nodes = new WatchedStore<ReturnType<typeof kubeNodeObject>>();
    const calls = new InFlight();
    const metrics = new CountingMetrics(new Registry());
    let fields: StatusFields = new Set(['replicas', 'readyReplicas', 'selector', 'observedGeneration']);
    const writes: SandboxWarmPoolStatus[] = [];
    let rv = 100;
    const store = new MemoryEpochStore();
    const nodeLister = new Lister(nodes);
    const reconciler = new WarmPoolReconciler({
      pools: new Lister(pools),
      templates: new Lister(templates),
      inventories: new Lister(inventories),
      addresses: () => addressCheckOf({ node: (name) => nodeLister.get(name) }),
      setter: {
        setPools: (_node, _generation, targets) => calls.track(async () => appliedInfoOf(targets)),
        info: () => calls.track(async () => ({ pools: [], claimed: 0 })),
        close: async () => undefined,
      },
      statusWriter: {
        fit: (status) => fitStatus(status, fields),
        write: (pool, status) =>
          calls.track(async () => {
            writes.push(status);
            const updated = { ...pool, metadata: { ...pool.metadata, resourceVersion: String(++rv) }, status };
            pools.upsert(updated);
            return { outcome: 'written' as const, object: updated };
          }),
      },
      events: { record: () => undefined, close: async () => undefined },
      generations: new GenerationSource({ advance: (minimum, signal, floor) => store.advance(minimum, signal, floor) }),
      token: () => 'fleet',
      metrics,
      logger: silentLogger,
      clock,
      intervalMs: 30_000,
    });
    inventories.onChange = (name) => reconciler.noteNode(name);
    nodes.onChange = (name) => reconciler.noteNode(name);
    const settle = async (): Promise<void> => {
      for (let i = 0; i < 3; i++) await calls.quiet(() => metrics.runs);
    };
    templates.upsert(templateObject('ns', 'tpl', 'img'));
    inventories.upsert(inventoryObject('n0', { publishedAt: clock.iso() }));
    nodes.upsert(kubeNodeObject('n0'));
    pools.upsert(poolObject('ns', 'p0', 'tpl', 2));
    try {
      reconciler.lead(new AbortController().signal);
      await settle();
      // A run after the write has landed in the cache: the written status is found equal, and kept so.
      reconciler.poke('event');
      await settle();
      expect(writes.at(-1)?.conditions).toBeUndefined();

      // The lease is lost for a moment; meanwhile the CRD is upgraded to hold conditions (driver.ts pokes a resync).
      reconciler.stopLeading();
      fields = 'any';
      reconciler.pokeResync('status schema changed');
      await settle();
      reconciler.lead(new AbortController().signal);
      await settle();
      expect(pools.get('ns/p0')?.status?.conditions?.map((c) => c.type)).toEqual(['Ready', 'Degraded']);
    } finally {
      await reconciler.close();
    }
  });
});
