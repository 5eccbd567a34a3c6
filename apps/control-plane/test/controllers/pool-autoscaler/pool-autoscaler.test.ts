// The SandboxWarmPoolAutoscaler end to end: a real kube-apiserver (the CRD, its
// schema and the scale subresource), a real Redis (the claim counts), two real
// node agents each in front of a fake-sandboxd, and one control plane in this
// process serving the HTTP claim API. Short windows (a 2 s claim window, a 4 s
// stabilisation, a 0.5 s tick) so a burst and a quiet period fit in seconds.
import { WARMPOOL_GROUP, WARMPOOL_VERSION, type SandboxWarmPool, type SandboxWarmPoolAutoscaler } from '@warmpool/api';
import { eventually, template, warmPool, type TestCluster } from '@warmpool/harness';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callClaims, serviceAccountToken } from '../../support/claims.js';
import type { ControlPlane } from '../../../src/options.js';
import { apply, kubectl } from '../../support/objects.js';
import { testWorld, type TestWorld } from '../../support/world.js';
import { claimsReady } from '../../support/metrics.js';

const TOKEN = 'fleet-token-for-pool-autoscaler-tests';
const IMAGE = 'registry.test/pool-autoscaler:1';

function autoscaler(namespace: string, name: string, pool: string, spec: Record<string, unknown> = {}): object {
  return {
    apiVersion: `${WARMPOOL_GROUP}/${WARMPOOL_VERSION}`,
    kind: 'SandboxWarmPoolAutoscaler',
    metadata: { namespace, name },
    spec: {
      scaleTargetRef: { kind: 'SandboxWarmPool', name: pool },
      minReplicas: 1,
      maxReplicas: 60,
      targetHitRatio: 0.99,
      claimWindowSeconds: 2,
      behavior: { scaleDown: { stabilizationWindowSeconds: 4 } },
      ...spec,
    },
  };
}

describe('SandboxWarmPoolAutoscaler (real apiserver, Redis, agents and fake-sandboxd)', () => {
  let world: TestWorld;
  let cluster: TestCluster;
  let ns: string;
  let cp: ControlPlane;
  let claimer: string;

  const get = async <T>(kind: string, name: string): Promise<T> =>
    JSON.parse(await kubectl(cluster, ['get', kind, name, '-n', ns, '-o', 'json'])) as T;
  const replicasOf = async (pool: string): Promise<number> =>
    (await get<SandboxWarmPool>('sandboxwarmpools', pool)).spec.replicas ?? 1;
  const statusOf = async (name: string): Promise<SandboxWarmPoolAutoscaler['status']> =>
    (await get<SandboxWarmPoolAutoscaler>('sandboxwarmpoolautoscalers', name)).status;
  const conditionOf = async (name: string, type: string): Promise<{ status?: string; reason?: string } | undefined> =>
    (await statusOf(name))?.conditions?.find((c) => c.type === type);

  beforeAll(async () => {
    world = await testWorld({
      name: 'cp-pool-autoscaler',
      token: TOKEN,
      redis: true,
      fleet: { count: 2, capacity: 200, sandboxdArgs: ['--boot-ms', '200ms', '--cold-boot-ms', '200ms'] },
    });
    ({ cluster } = world);
    ns = await world.namespace('demand');
    claimer = await serviceAccountToken(cluster, ns, 'claimer', ['create', 'get', 'update', 'delete']);
    await apply(cluster, template(ns, 'tpl', IMAGE), warmPool(ns, 'demo', 'tpl', 1));
    cp = await world.leader('default', {
      claims: world.claimsOptions({ settings: { claimTimeoutMs: 10_000 } }),
      poolAutoscaler: { tickMs: 500, initialLeadTimeSeconds: 1 },
    });
    await eventually(() => claimsReady(cp), { what: 'the claim API ready' });
    // The autoscaler cache is one of the replica's caches: it syncs, so readiness does not wait on it.
    await eventually(() => cp.notReadyReasons().length === 0, { what: 'the replica ready' });
  });

  afterAll(() => world?.close());

  it('raises the pool for a burst of claims, then brings it back to minReplicas after a quiet period', async () => {
    await apply(cluster, autoscaler(ns, 'demo', 'demo'));
    await eventually(async () => (await conditionOf('demo', 'ScalingActive'))?.status === 'True', {
      what: 'the autoscaler to step',
      timeoutMs: 20_000,
    });
    expect(await replicasOf('demo')).toBe(1);

    // A burst: 40 claims at once through the HTTP claim API.
    const answers = await Promise.all(
      Array.from({ length: 40 }, () =>
        callClaims(cp.claimsUrl ?? '', 'POST', `/v1/namespaces/${ns}/claims`, claimer, {
          warmPool: 'demo',
          ttlSeconds: 600,
        }),
      ),
    );
    expect(answers.map((a) => a.status).every((s) => s === 201 || s === 200)).toBe(true);
    await eventually(async () => (await replicasOf('demo')) > 5, {
      what: 'the pool raised above 5 replicas',
      timeoutMs: 20_000,
    });
    const raised = await statusOf('demo');
    expect(raised?.claimRate).toBeGreaterThan(0);
    expect(raised?.lastScaleTime).toBeDefined();
    expect(raised?.observedHitRatio).toBeGreaterThanOrEqual(0);
    expect(raised?.observedHitRatio).toBeLessThanOrEqual(1);

    // Quiet: the claim window empties, the stabilisation window passes, the pool goes back to minReplicas.
    await eventually(async () => (await replicasOf('demo')) === 1, {
      what: 'the pool back to minReplicas',
      timeoutMs: 30_000,
    });
    const quiet = await statusOf('demo');
    expect(quiet?.desiredReplicas).toBe(1);
    expect(quiet?.conditions?.find((c) => c.type === 'AbleToScale')?.status).toBe('True');

    // Every claim was counted once, by tier, in the replica that served it.
    const metrics = await cp.registry.metrics();
    const counted = [...metrics.matchAll(/^warmpool_pool_claims_total\{([^}]*)\} (\d+)$/gm)]
      .filter(([, labels]) => labels?.includes(`pool_namespace="${ns}"`) && labels.includes('pool="demo"'))
      .reduce((n, [, , value]) => n + Number(value), 0);
    expect(counted).toBe(40);
  });

  it('cuts nothing on counts Redis lost: it holds until it has counted a whole window again', async () => {
    await apply(cluster, warmPool(ns, 'lossy', 'tpl', 1), autoscaler(ns, 'lossy', 'lossy', { claimWindowSeconds: 8 }));
    await eventually(async () => (await conditionOf('lossy', 'ScalingActive'))?.status === 'True', {
      what: 'the autoscaler to step',
      timeoutMs: 20_000,
    });
    await Promise.all(
      Array.from({ length: 30 }, () =>
        callClaims(cp.claimsUrl ?? '', 'POST', `/v1/namespaces/${ns}/claims`, claimer, {
          warmPool: 'lossy',
          ttlSeconds: 600,
        }),
      ),
    );
    await eventually(async () => (await replicasOf('lossy')) > 5, { what: 'the pool raised', timeoutMs: 20_000 });
    const raised = await replicasOf('lossy');
    // Redis restarted empty, as far as the counts go: every demand key is gone.
    const redis = new Redis(world.redis.url);
    try {
      const keys = await redis.keys('warmpool:demand:*');
      if (keys.length > 0) await redis.del(...keys);
    } finally {
      redis.disconnect();
    }
    // One status snapshot: while the counts are incomplete, it holds at least what the burst raised.
    let holding: SandboxWarmPoolAutoscaler['status'];
    await eventually(
      async () => {
        holding = await statusOf('lossy');
        return holding?.conditions?.some((c) => c.reason === 'IncompleteClaimCounts') === true;
      },
      { what: 'ScalingActive reason IncompleteClaimCounts', timeoutMs: 20_000, intervalMs: 100 },
    );
    expect(holding?.desiredReplicas).toBeGreaterThanOrEqual(raised);
    expect(holding?.recommendedReplicas).toBeLessThan(holding?.desiredReplicas ?? 0);
    await eventually(async () => (await replicasOf('lossy')) === 1, {
      what: 'the pool back to minReplicas once a whole window was counted',
      timeoutMs: 40_000,
    });
  });

  it('shows its numbers in kubectl get', async () => {
    const table = await kubectl(cluster, ['get', 'sandboxwarmpoolautoscalers', '-n', ns]);
    const header = table.split('\n')[0] ?? '';
    for (const column of ['POOL', 'MIN', 'MAX', 'TARGET', 'HIT', 'CLAIMS/S', 'LEAD-S', 'REPLICAS', 'REASON'])
      expect(header).toContain(column);
    expect(table).toContain('demo');
  });

  it('says so when its target pool does not exist, and scales nothing', async () => {
    await apply(cluster, autoscaler(ns, 'orphan', 'no-such-pool'));
    await eventually(async () => (await conditionOf('orphan', 'AbleToScale'))?.reason === 'TargetNotFound', {
      what: 'AbleToScale False, TargetNotFound',
      timeoutMs: 20_000,
    });
    expect((await conditionOf('orphan', 'AbleToScale'))?.status).toBe('False');
    expect((await statusOf('orphan'))?.desiredReplicas).toBeUndefined();
  });

  it('is refused by the apiserver when minReplicas exceeds maxReplicas or the target is not a SandboxWarmPool', async () => {
    await expect(
      apply(cluster, autoscaler(ns, 'upside-down', 'demo', { minReplicas: 5, maxReplicas: 2 })),
    ).rejects.toThrow(/minReplicas must not exceed maxReplicas/);
    await expect(
      apply(cluster, autoscaler(ns, 'not-a-pool', 'demo', { scaleTargetRef: { kind: 'Deployment', name: 'demo' } })),
    ).rejects.toThrow(/Unsupported value/);
    await expect(apply(cluster, autoscaler(ns, 'over-one', 'demo', { targetHitRatio: 1 }))).rejects.toThrow(
      /targetHitRatio/,
    );
  });
});
