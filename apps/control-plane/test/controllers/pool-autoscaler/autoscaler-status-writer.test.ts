// The pool autoscaler's status write against a real apiserver: it lands only
// on the very SandboxWarmPoolAutoscaler it was computed from. A status
// computed from a cache that still holds an autoscaler deleted meanwhile never
// lands on the namesake created after it, nor over a change it did not see;
// the controller says so at debug, writes it again on a later tick if it still
// has to, and keeps stepping.
import {
  SandboxWarmPoolAutoscalerType,
  WARMPOOL_GROUP,
  WARMPOOL_VERSION,
  type NodeInventory,
  type PoolAutoscalerStatus,
  type SandboxTemplate,
  type SandboxWarmPool,
  type SandboxWarmPoolAutoscaler,
} from '@warmpool/api';
import { startCluster, type TestCluster } from '@warmpool/harness';
import { Lister, ObjectStore, ResourceClient } from '@warmpool/kube';
import { createLogger, systemClock } from '@warmpool/runtime';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { reborn } from '../../support/namesake.js';
import { ClaimCounter } from '../../../src/controllers/pool-autoscaler/claim-counter.js';
import { PoolAutoscalerController } from '../../../src/controllers/pool-autoscaler/controller.js';
import { PoolAutoscalerMetrics } from '../../../src/controllers/pool-autoscaler/metrics.js';
import { KubeAutoscalerStatusWriter } from '../../../src/controllers/pool-autoscaler/status-writer.js';

const NAMESPACE = 'default';

const STATUS: PoolAutoscalerStatus = {
  observedGeneration: 1,
  currentReplicas: 3,
  desiredReplicas: 9,
  conditions: [
    {
      type: 'AbleToScale',
      status: 'True',
      reason: 'SucceededRescale',
      message: 'the target pool takes scale writes',
      lastTransitionTime: '2030-01-01T00:00:00Z',
    },
  ],
};

function autoscaler(name: string): SandboxWarmPoolAutoscaler {
  return {
    apiVersion: `${WARMPOOL_GROUP}/${WARMPOOL_VERSION}`,
    kind: 'SandboxWarmPoolAutoscaler',
    metadata: { namespace: NAMESPACE, name },
    spec: { scaleTargetRef: { kind: 'SandboxWarmPool', name: 'no-such-pool' }, minReplicas: 1, maxReplicas: 10 },
  };
}

describe("the pool autoscaler's status write", () => {
  let cluster: TestCluster;
  let autoscalers: ResourceClient<SandboxWarmPoolAutoscaler>;
  let writer: KubeAutoscalerStatusWriter;

  beforeAll(async () => {
    cluster = await startCluster({ name: 'autoscaler-status-writer' });
    autoscalers = new ResourceClient<SandboxWarmPoolAutoscaler>(cluster.kubeConfig, SandboxWarmPoolAutoscalerType);
    writer = new KubeAutoscalerStatusWriter(cluster.kubeConfig);
  });
  afterAll(() => cluster?.stop());

  const create = (name: string): Promise<SandboxWarmPoolAutoscaler> => autoscalers.create(autoscaler(name));
  const recreate = (name: string): Promise<{ old: SandboxWarmPoolAutoscaler; namesake: SandboxWarmPoolAutoscaler }> =>
    reborn(autoscalers, autoscaler(name));

  it('writes the status onto the autoscaler it was computed from', async () => {
    const created = await create('plain');
    const result = await writer.write(created, STATUS);
    const stored = await autoscalers.get({ namespace: NAMESPACE, name: 'plain' });
    expect(stored.status).toEqual(STATUS);
    expect(result.outcome).toBe('written');
  });

  it('replaces the status whole: a number the new step does not have is gone, not left from the last one', async () => {
    const created = await create('numbers');
    const first = await writer.write(created, {
      ...STATUS,
      claimRate: 12.5,
      observedHitRatio: 0.98,
      leadTimeSeconds: 3,
    });
    expect(first.outcome).toBe('written');
    const before = await autoscalers.get({ namespace: NAMESPACE, name: 'numbers' });
    expect(before.status?.observedHitRatio).toBe(0.98);
    await writer.write(before, STATUS);
    const stored = await autoscalers.get({ namespace: NAMESPACE, name: 'numbers' });
    expect(stored.status).toEqual(STATUS);
  });

  it('writes nothing onto a namesake created after the autoscaler was deleted', async () => {
    const { old, namesake } = await recreate('reborn');
    const result = await writer.write(old, STATUS);
    const stored = await autoscalers.get({ namespace: NAMESPACE, name: 'reborn' });
    expect(stored.metadata.uid).toBe(namesake.metadata.uid);
    expect(stored.status).toBeUndefined();
    expect(result.outcome).toBe('moved');
  });

  it('writes nothing over a change it did not see', async () => {
    const stale = await create('changed');
    await autoscalers.patch({ namespace: NAMESPACE, name: 'changed' }, { spec: { maxReplicas: 20 } });
    const result = await writer.write(stale, STATUS);
    expect((await autoscalers.get({ namespace: NAMESPACE, name: 'changed' })).status).toBeUndefined();
    expect(result.outcome).toBe('moved');
  });

  it('writes nothing once the autoscaler is gone', async () => {
    const gone = await create('gone');
    await autoscalers.delete({ namespace: NAMESPACE, name: 'gone' });
    expect((await writer.write(gone, STATUS)).outcome).toBe('gone');
  });

  it("leaves a namesake alone when the controller's cache still holds the deleted autoscaler, and tries again on a later tick", async () => {
    const { old, namesake } = await recreate('cached');
    const cache = new ObjectStore<SandboxWarmPoolAutoscaler>();
    cache.upsert(old);
    const lines: string[] = [];
    const outcomes: string[] = [];
    let attempts = 0;
    // The target pool is missing, so a step writes TargetNotFound and never counts claims: this Redis client is
    // never connected.
    const redis = new Redis({ lazyConnect: true, host: '127.0.0.1', port: 1 });
    const controller = new PoolAutoscalerController({
      autoscalers: new Lister(cache),
      pools: new Lister(new ObjectStore<SandboxWarmPool>()),
      templates: new Lister(new ObjectStore<SandboxTemplate>()),
      inventories: new Lister(new ObjectStore<NodeInventory>()),
      counter: new ClaimCounter(redis, 'autoscaler-status-writer'),
      target: {
        scale: () => Promise.reject(new Error('no pool to scale')),
      },
      writer: {
        write: async (target, status, signal) => {
          attempts++;
          const result = await writer.write(target, status, signal);
          outcomes.push(result.outcome);
          return result;
        },
      },
      metrics: new PoolAutoscalerMetrics(new Registry()),
      staleAfterMs: 60_000,
      settings: { tickMs: 50 },
      clock: systemClock,
      logger: createLogger('pool-autoscaler', { level: 'debug', write: (line) => lines.push(line) }),
    });
    try {
      controller.startLeading(new AbortController().signal);
      // Refused, and not taken for written: the next ticks try again (on the cache as it is then).
      await vi.waitFor(() => expect(attempts).toBeGreaterThanOrEqual(2), { timeout: 10_000 });
      const stored = await autoscalers.get({ namespace: NAMESPACE, name: 'cached' });
      expect(stored.metadata.uid).toBe(namesake.metadata.uid);
      expect(stored.status).toBeUndefined();
      await vi.waitFor(() => expect(outcomes.length).toBeGreaterThanOrEqual(2));
      expect(new Set(outcomes)).toEqual(new Set(['moved']));
      const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(records.filter((r) => r['level'] === 'warn' || r['level'] === 'error')).toEqual([]);
      expect(records.find((r) => r['outcome'] !== undefined)).toMatchObject({
        level: 'debug',
        autoscaler: `${NAMESPACE}/cached`,
        outcome: 'moved',
      });
      // The cache catches up with the namesake: its own status is written.
      cache.upsert(namesake);
      await vi.waitFor(
        async () => {
          const status = (await autoscalers.get({ namespace: NAMESPACE, name: 'cached' })).status;
          expect(status?.conditions?.find((c) => c.type === 'AbleToScale')?.reason).toBe('TargetNotFound');
        },
        { timeout: 10_000 },
      );
    } finally {
      await controller.close();
      redis.disconnect();
    }
  });
});
