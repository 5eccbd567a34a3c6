// SandboxEnv status and the Env autoscaler: the pure rules,
// then one real kube-apiserver, Redis, two node agents with fake-sandboxds and
// an in-process control plane, with claims made through the HTTP claim API.
import { claimBodySchema, type SandboxEnv, type ScalingGroupStatus } from '@warmpool/api';
import { eventually, sandboxEnv, sleep, template, warmPool, type TestCluster } from '@warmpool/harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { distribute, nextTotal, type GroupScaleInput } from '../../../src/controllers/sandboxenvs/autoscaler.js';
import type { PoolCounts } from '../../../src/controllers/sandboxenvs/counts.js';
import { coarseDuration, envCapacity, SaturationTracker } from '../../../src/controllers/sandboxenvs/status.js';
import type { ControlPlane } from '../../../src/options.js';
import { callClaims, serviceAccountToken } from '../../support/claims.js';
import { apply, getEnv, getPool, kubectl } from '../../support/objects.js';
import { testWorld, type TestWorld } from '../../support/world.js';
import { claimsReady } from '../../support/metrics.js';

const counts = (rows: Record<string, Partial<PoolCounts>>): Map<string, PoolCounts> =>
  new Map(Object.entries(rows).map(([ref, c]) => [ref, { idle: 0, running: 0, pending: 0, desired: 0, ...c }]));

function env(members: Record<string, string>, autoscaling: SandboxEnv['spec']['autoscaling'] = []): SandboxEnv {
  return {
    metadata: { namespace: 'ns', name: 'web' },
    spec: { members: Object.entries(members).map(([pool, scalingGroup]) => ({ pool, scalingGroup })), autoscaling },
  };
}

describe('SandboxEnv status rows (pure)', () => {
  it('sums each group over its member pools, with the whole-Env row "" first; a missing pool counts nothing and has no record', () => {
    const capacity = envCapacity(
      env({ a: 'cpu', b: 'cpu', g: 'gpu', ghost: 'cpu' }, [{ scalingGroup: 'gpu', enabled: true, maxReplicas: 5 }]),
      counts({
        'ns/a': { idle: 2, running: 1, pending: 1, desired: 3 },
        'ns/b': { idle: 1, desired: 1 },
        'ns/g': { idle: 0, running: 2, desired: 2 },
      }),
      new SaturationTracker().clock(0),
    );
    expect(capacity.groups).toEqual([
      {
        name: '',
        idle: 3,
        running: 3,
        pending: 1,
        desired: 6,
        autoscalingEnabled: true,
        capacity: 3,
        saturatedForMs: 0,
      },
      {
        name: 'cpu',
        idle: 3,
        running: 1,
        pending: 1,
        desired: 4,
        autoscalingEnabled: false,
        capacity: 0,
        saturatedForMs: 0,
      },
      {
        name: 'gpu',
        idle: 0,
        running: 2,
        pending: 0,
        desired: 2,
        autoscalingEnabled: true,
        capacity: 3,
        saturatedForMs: 0,
      },
    ]);
    expect(capacity.records.map((r) => r.memberPool)).toEqual(['a', 'b', 'g']);
    expect(capacity.records.find((r) => r.memberPool === 'g')).toMatchObject({
      scalingGroup: 'gpu',
      autoscalingEnabled: true,
      capacity: 3,
    });
  });

  it('reads capacity -1 with no maxReplicas, 0 at the ceiling, and counts saturation only at the ceiling with idle 0', () => {
    const tracker = new SaturationTracker();
    const spec = env({ a: 'x', b: 'y' }, [
      { scalingGroup: 'x', enabled: true },
      { scalingGroup: 'y', enabled: true, maxReplicas: 2 },
    ]);
    const pools = counts({ 'ns/a': { desired: 3 }, 'ns/b': { desired: 2, running: 2 } });
    const first = envCapacity(spec, pools, tracker.clock(1_000));
    expect(first.groups.map((g) => [g.name, g.capacity])).toEqual([
      ['', -1],
      ['x', -1],
      ['y', 0],
    ]);
    expect(first.groups.find((g) => g.name === 'y')?.saturatedForMs).toBe(1);
    const later = envCapacity(spec, pools, tracker.clock(31_000));
    expect(later.groups.find((g) => g.name === 'y')?.saturatedForMs).toBe(30_000);
    expect(later.groups.find((g) => g.name === '')?.saturatedForMs).toBe(0);
    const refilled = envCapacity(
      spec,
      counts({ 'ns/a': { desired: 3 }, 'ns/b': { desired: 2, idle: 1 } }),
      tracker.clock(32_000),
    );
    expect(refilled.groups.find((g) => g.name === 'y')?.saturatedForMs).toBe(0);
    expect([coarseDuration(9_999), coarseDuration(34_000), coarseDuration(125_000)]).toEqual(['0s', '30s', '2m']);
  });
});

describe("the Env autoscaler's rule (pure)", () => {
  const base: GroupScaleInput = {
    total: 2,
    idle: 2,
    pending: 0,
    unapplied: 0,
    claimedSinceLast: 0,
    minReplicas: 0,
    maxReplicas: 10,
    targetIdle: 2,
    mayScaleDown: true,
    mayScaleUp: true,
  };

  it('raises by the shortfall of targetIdle plus the claims since the last run, counting what is already booting or not yet applied', () => {
    expect(nextTotal({ ...base, idle: 0 })).toBe(4);
    expect(nextTotal({ ...base, idle: 0, claimedSinceLast: 3 })).toBe(7);
    expect(nextTotal({ ...base, idle: 0, pending: 2, claimedSinceLast: 3 })).toBe(5);
    expect(nextTotal({ ...base, idle: 0, pending: 2 })).toBe(2);
    expect(nextTotal({ ...base, idle: 0, unapplied: 2 })).toBe(2);
  });

  it('within the cooldown after a raise, raises again only for new claims (a boot the inventory does not show yet is not a shortfall)', () => {
    expect(nextTotal({ ...base, idle: 0, mayScaleUp: false })).toBe(2);
    expect(nextTotal({ ...base, idle: 0, mayScaleUp: false, claimedSinceLast: 1 })).toBe(5);
    expect(nextTotal({ ...base, total: 0, idle: 0, minReplicas: 1, mayScaleUp: false })).toBe(1);
  });

  it('stops at maxReplicas and keeps within minReplicas', () => {
    expect(nextTotal({ ...base, idle: 0, maxReplicas: 3 })).toBe(3);
    expect(nextTotal({ ...base, total: 3, idle: 0, maxReplicas: 3 })).toBe(3);
    expect(nextTotal({ ...base, total: 0, idle: 5, minReplicas: 1 })).toBe(1);
    expect(nextTotal({ ...base, total: 9, idle: 9, maxReplicas: 4 })).toBe(4);
  });

  it('scales down only beyond the band and after the sleep: no flapping between two sizes', () => {
    expect(nextTotal({ ...base, idle: 3 })).toBe(2);
    expect(nextTotal({ ...base, total: 6, idle: 6 })).toBe(2);
    expect(nextTotal({ ...base, total: 6, idle: 6, mayScaleDown: false })).toBe(6);
    expect(nextTotal({ ...base, total: 6, idle: 6, pending: 1 })).toBe(6);
    // From every size the rule reaches, applying it again changes nothing.
    for (let idle = 0; idle <= 8; idle++) {
      const once = nextTotal({ ...base, idle, total: 4 });
      expect(nextTotal({ ...base, total: once, idle: Math.max(0, idle + once - 4) })).toBe(once);
    }
  });

  it('gives new replicas to the member with the fewest and takes them from the one with the most', () => {
    const members = [
      { pool: 'a', replicas: 3 },
      { pool: 'b', replicas: 1 },
    ];
    const spread = (total: number): Record<string, number> => Object.fromEntries(distribute(members, total));
    expect(spread(6)).toEqual({ a: 3, b: 3 });
    expect(spread(7)).toEqual({ a: 4, b: 3 });
    expect(spread(2)).toEqual({ a: 1, b: 1 });
  });
});

const TOKEN = 'fleet-token-for-env-tests';
const IMAGE = 'registry.test/envs:1';

describe('SandboxEnv status and autoscaling (real apiserver, Redis, agents and fake-sandboxd)', () => {
  let world: TestWorld;
  let cluster: TestCluster;
  let ns: string;
  let cp: ControlPlane;
  let user: string;

  const group = async (envName: string, name: string): Promise<ScalingGroupStatus | undefined> =>
    (await getEnv(cluster, ns, envName)).status?.scalingGroups?.find((g) => g.name === name);
  const claim = async (warmPool: string): Promise<string> => {
    const answer = await callClaims(cp.claimsUrl ?? '', 'POST', `/v1/namespaces/${ns}/claims`, user, {
      warmPool,
      ttlSeconds: 600,
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return claimBodySchema.parse(answer.body).id;
  };

  beforeAll(async () => {
    world = await testWorld({
      name: 'envs',
      token: TOKEN,
      redis: true,
      // Refill boots take seconds, so a burst of claims leaves the pool without idle sandboxes for a while.
      fleet: { count: 2, capacity: 20, sandboxdArgs: ['--boot-ms', '8000'] },
    });
    cluster = world.cluster;
    ns = await world.namespace('envs');
    user = await serviceAccountToken(cluster, ns, 'claimer', ['create', 'get', 'update', 'delete']);
    await apply(
      cluster,
      template(ns, 'web-tpl', IMAGE),
      template(ns, 'auto-tpl', 'registry.test/auto:1'),
      warmPool(ns, 'web-a', 'web-tpl', 3),
      warmPool(ns, 'auto-1', 'auto-tpl', 1),
      sandboxEnv(ns, 'web', { 'web-a': 'cpu', ghost: 'cpu' }),
      sandboxEnv(ns, 'auto', { 'auto-1': 'burst' }, [
        { scalingGroup: 'burst', enabled: true, minReplicas: 1, maxReplicas: 3, targetIdle: 2 },
      ]),
    );
    cp = await world.controlPlane('default', {
      claims: world.claimsOptions(),
      federation: { intervalMs: 500 },
      envScaleDownDelayMs: 600_000,
    });
    await eventually(async () => cp.isLeader() && (await claimsReady(cp)), {
      what: 'leading and ready to claim',
      timeoutMs: 30_000,
    });
  }, 180_000);

  afterAll(() => world?.close());

  it("writes each group's idle / running / pending / desired and the whole-Env row, and shows them in kubectl get", async () => {
    await eventually(async () => (await group('web', ''))?.idle === 3, { what: 'web idle 3', timeoutMs: 30_000 });
    expect((await getEnv(cluster, ns, 'web')).status?.scalingGroups).toEqual([
      { name: '', idle: 3, running: 0, pending: 0, desired: 3, autoscalingEnabled: false, capacity: 0 },
      { name: 'cpu', idle: 3, running: 0, pending: 0, desired: 3, autoscalingEnabled: false, capacity: 0 },
    ]);
    expect(await kubectl(cluster, ['get', 'senv', 'web', '-n', ns])).toMatch(/^web\s+3\s+0\s+3\s/m);
  });

  it('counts claimed sandboxes as running (the agents publish per-pool claimed counts)', async () => {
    await claim('web-a');
    await eventually(async () => (await group('web', 'cpu'))?.running === 1, {
      what: 'web running 1',
      timeoutMs: 30_000,
    });
    const inventories = await kubectl(cluster, ['get', 'nodeinventories', '-o', 'json']);
    expect(inventories).toContain('"claimed": 1');
  });

  it('writes status only when it changes', async () => {
    await eventually(async () => (await group('web', ''))?.idle === 3, { what: 'web refilled', timeoutMs: 30_000 });
    await sleep(1_500);
    // Any write, even of the same status, would move the object's resourceVersion.
    const before = (await getEnv(cluster, ns, 'web')).metadata.resourceVersion;
    await sleep(3_000);
    expect((await getEnv(cluster, ns, 'web')).metadata.resourceVersion).toBe(before);
  });

  it('raises a pool whose group has fewer idle than targetIdle, stops at maxReplicas (saturated) and does not flap', async () => {
    await eventually(async () => ((await getPool(cluster, ns, 'auto-1')).spec.replicas ?? 0) >= 2, {
      what: 'auto-1 raised to targetIdle',
      timeoutMs: 30_000,
    });
    await eventually(async () => (await group('auto', 'burst'))?.idle === 2, {
      what: 'burst idle 2',
      timeoutMs: 30_000,
    });
    expect((await getPool(cluster, ns, 'auto-1')).spec.replicas).toBe(2);
    for (let i = 0; i < 5; i++) await claim('auto-1');
    await eventually(
      async () => {
        const row = await group('auto', 'burst');
        return row?.desired === 3 && row.capacity === 0 && row.idle === 0 && row.saturatedFor !== undefined
          ? row
          : undefined;
      },
      { what: 'burst at maxReplicas 3, saturated', timeoutMs: 30_000 },
    );
    // A scale would move the pool's metadata.generation; status writes do not.
    const generation = (await getPool(cluster, ns, 'auto-1')).metadata.generation;
    await sleep(3_000);
    expect((await getPool(cluster, ns, 'auto-1')).spec.replicas).toBe(3);
    expect((await getPool(cluster, ns, 'auto-1')).metadata.generation).toBe(generation);
    expect(await group('auto', '')).toMatchObject({
      autoscalingEnabled: true,
      capacity: 0,
      saturatedFor: expect.stringMatching(/^\d+[sm]$/),
    });
  });
});
