// The warm-pool driver end to end: a real kube-apiserver, three real node
// agents (processes) each in front of a fake-sandboxd (process), and the
// control plane in this process. What the nodes hold is read straight from
// each fake-sandboxd.
import { eventually, sleep, template, warmPool, type TestCluster } from '@warmpool/harness';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlane, ControlPlaneOptions } from '../../../src/options.js';
import type { Fleet } from '../../support/fleet.js';
import { metricSum } from '../../support/metrics.js';
import { apply, condition, getPool, kubectl, leaseHolder, patch } from '../../support/objects.js';
import { testWorld, type TestWorld } from '../../support/world.js';

const TOKEN = 'fleet-token-for-control-plane-tests';
const CAPACITY = 20;

function keyOf(image: string): string {
  return `${image}|none|small`;
}

describe('the warm-pool driver (real apiserver, real agents, fake-sandboxd)', () => {
  let world: TestWorld;
  let cluster: TestCluster;
  let fleet: Fleet;
  let system: string;
  let controlPlane: ControlPlane | undefined;

  /** A control plane in place of the last one. */
  async function replaceControlPlane(overrides: Partial<ControlPlaneOptions>): Promise<ControlPlane> {
    await controlPlane?.close();
    controlPlane = await world.controlPlane(system, overrides);
    return controlPlane;
  }

  /** A control plane in place of the last one, once it leads. */
  async function leader(overrides: Partial<ControlPlaneOptions> = {}): Promise<ControlPlane> {
    const started = await replaceControlPlane(overrides);
    await eventually(() => started.isLeader(), { what: 'the control plane to lead' });
    return started;
  }

  beforeAll(async () => {
    world = await testWorld({ name: 'cp-driver', token: TOKEN, fleet: { count: 3, capacity: CAPACITY } });
    ({ cluster, fleet } = world);
    system = await cluster.createNamespace('warmpool-system');
    await leader();
  });

  afterEach(() => world?.emptyNamespaces('sandboxwarmpools'));

  afterAll(() => world?.close());

  it("sets every node's warm target when a pool is applied", async () => {
    const ns = await world.namespace('apply');
    await apply(cluster, template(ns, 'tpl', 'registry.test/apply:1'), warmPool(ns, 'pool', 'tpl', 6));
    await eventually(async () => (await fleet.targetsOf(keyOf('registry.test/apply:1'))).join(',') === '2,2,2', {
      what: 'targets 2,2,2',
    });
  });

  it('reports replicas, readyReplicas, conditions and observedGeneration once the pool has filled', async () => {
    const ns = await world.namespace('status');
    await apply(cluster, template(ns, 'tpl', 'registry.test/status:1'), warmPool(ns, 'pool', 'tpl', 6));
    const pool = await eventually(
      async () => {
        const p = await getPool(cluster, ns, 'pool');
        return p.status?.readyReplicas === 6 && condition(p, 'Ready')?.status === 'True' ? p : undefined;
      },
      { what: 'the pool to be Ready with 6 warm' },
    );
    expect(pool.status).toMatchObject({
      replicas: 6,
      readyReplicas: 6,
      selector: 'warmpool.dev/pool=pool',
      observedGeneration: pool.metadata.generation,
    });
    expect(condition(pool, 'Ready')).toMatchObject({
      status: 'True',
      reason: 'AllReplicasWarm',
      message: '6 of 6 replicas are warm',
      observedGeneration: pool.metadata.generation,
    });
    expect(condition(pool, 'Degraded')).toMatchObject({ status: 'False', reason: 'AllPlaced' });
    const warm = await Promise.all(
      fleet.nodes.map(async (node) => (await node.warm()).get(keyOf('registry.test/status:1'))),
    );
    expect(warm).toEqual([2, 2, 2]);

    const row = (await kubectl(cluster, ['get', 'swp', 'pool', '-n', ns, '--no-headers'])).trim().split(/\s+/);
    expect(row.slice(0, 3)).toEqual(['pool', '6', '6']);
    const events = JSON.parse(await kubectl(cluster, ['get', 'events', '-n', ns, '-o', 'json'])) as {
      items: Array<{ reason: string }>;
    };
    expect(events.items.map((e) => e.reason)).toContain('PoolReady');
  });

  it('scales a pool when its replicas are patched, down to 0', async () => {
    const ns = await world.namespace('scale');
    const key = keyOf('registry.test/scale:1');
    await apply(cluster, template(ns, 'tpl', 'registry.test/scale:1'), warmPool(ns, 'pool', 'tpl', 3));
    await eventually(async () => (await fleet.targetsOf(key)).join(',') === '1,1,1', { what: 'targets 1,1,1' });

    await patch(cluster, 'swp', ns, 'pool', { spec: { replicas: 9 } });
    await eventually(async () => (await fleet.targetsOf(key)).join(',') === '3,3,3', { what: 'targets 3,3,3' });

    await kubectl(cluster, ['scale', 'swp', 'pool', '-n', ns, '--replicas=0']);
    await eventually(() => fleet.absentEverywhere(key), { what: 'the key drained on every node' });
    const pool = await eventually(
      async () => {
        const p = await getPool(cluster, ns, 'pool');
        return condition(p, 'Ready')?.reason === 'ScaledToZero' && p.status?.replicas === 0 ? p : undefined;
      },
      { what: 'status at 0' },
    );
    expect(pool.status?.readyReplicas).toBe(0);
  });

  it('drains a deleted pool from every node', async () => {
    const ns = await world.namespace('delete');
    const key = keyOf('registry.test/delete:1');
    await apply(cluster, template(ns, 'tpl', 'registry.test/delete:1'), warmPool(ns, 'pool', 'tpl', 6));
    await eventually(async () => (await fleet.targetsOf(key)).join(',') === '2,2,2', { what: 'targets 2,2,2' });
    await kubectl(cluster, ['delete', 'swp', 'pool', '-n', ns]);
    await eventually(() => fleet.absentEverywhere(key), { what: 'the key drained on every node' });
  });

  it("moves a pool to its new key when the template's image changes, and drains the old key", async () => {
    const ns = await world.namespace('rekey');
    const [before, after] = [keyOf('registry.test/rekey:1'), keyOf('registry.test/rekey:2')];
    await apply(cluster, template(ns, 'tpl', 'registry.test/rekey:1'), warmPool(ns, 'pool', 'tpl', 3));
    await eventually(async () => (await fleet.targetsOf(before)).join(',') === '1,1,1', { what: 'old key set' });

    await apply(cluster, template(ns, 'tpl', 'registry.test/rekey:2'));
    await eventually(async () => (await fleet.targetsOf(after)).join(',') === '1,1,1', { what: 'new key set' });
    await eventually(() => fleet.absentEverywhere(before), { what: 'the old key drained' });

    // net and size are part of the key too.
    await apply(
      cluster,
      template(ns, 'tpl', 'registry.test/rekey:2', { annotations: { 'warmpool.dev/size': 'large' } }),
    );
    await eventually(async () => (await fleet.targetsOf('registry.test/rekey:2|none|large')).join(',') === '1,1,1', {
      what: 'the large key set',
    });
    await eventually(() => fleet.absentEverywhere(after), { what: 'the small key drained' });
  });

  it('leaves pools whose template does not opt in alone', async () => {
    const ns = await world.namespace('upstream');
    const reconciles = async (): Promise<number> =>
      controlPlane === undefined ? 0 : metricSum(controlPlane, 'warmpool_controlplane_reconciles_total');
    const runsBefore = await reconciles();
    await apply(
      cluster,
      template(ns, 'tpl', 'registry.test/upstream:1', { optIn: false }),
      warmPool(ns, 'pool', 'tpl', 3),
    );
    // Several periodic runs see it.
    await eventually(async () => (await reconciles()) >= runsBefore + 4, { what: 'a few reconciles' });
    await sleep(1_000);
    expect(await fleet.absentEverywhere(keyOf('registry.test/upstream:1'))).toBe(true);
    expect((await getPool(cluster, ns, 'pool')).status).toBeUndefined();
  });

  it('reports a pool whose template is missing, pushes nothing for it, and drives it once the template appears', async () => {
    const ns = await world.namespace('missing');
    const key = keyOf('registry.test/missing:1');
    await apply(cluster, warmPool(ns, 'pool', 'nope', 3));
    const pool = await eventually(
      async () => {
        const p = await getPool(cluster, ns, 'pool');
        return condition(p, 'Ready')?.reason === 'TemplateNotFound' ? p : undefined;
      },
      { what: 'a TemplateNotFound condition' },
    );
    expect(condition(pool, 'Ready')).toMatchObject({
      status: 'False',
      message: expect.stringContaining(`SandboxTemplate ${ns}/nope not found`),
    });
    expect(condition(pool, 'Degraded')).toMatchObject({ status: 'True', reason: 'TemplateNotFound' });
    // Whose pool it is cannot be told: only the conditions are written.
    expect(pool.status?.replicas).toBeUndefined();

    await apply(cluster, template(ns, 'nope', 'registry.test/missing:1'));
    await eventually(async () => (await fleet.targetsOf(key)).join(',') === '1,1,1', {
      what: 'targets once the template exists',
    });
    await eventually(async () => condition(await getPool(cluster, ns, 'pool'), 'Ready')?.reason === 'AllReplicasWarm', {
      what: 'Ready',
    });
  });

  it('reports a template that names no pool key (no image) and pushes nothing for it', async () => {
    const ns = await world.namespace('invalid');
    await apply(cluster, template(ns, 'tpl', ''), warmPool(ns, 'pool', 'tpl', 3));
    const pool = await eventually(
      async () => {
        const p = await getPool(cluster, ns, 'pool');
        return condition(p, 'Ready')?.reason === 'InvalidTemplate' ? p : undefined;
      },
      { what: 'an InvalidTemplate condition' },
    );
    expect(condition(pool, 'Ready')?.message).toContain('has no image');
    expect(pool.status).toMatchObject({ replicas: 0, readyReplicas: 0 });
  });

  it("refuses a template whose net or size is outside sandboxd's closed sets: a condition and an Event on its pool, nothing pushed, the node's other pools unharmed", async () => {
    const ns = await world.namespace('closed-keys');
    const good = keyOf('registry.test/closed-good:1');
    await apply(
      cluster,
      template(ns, 'bad', 'registry.test/closed-bad:1', { annotations: { 'warmpool.dev/net': 'gpu' } }),
      warmPool(ns, 'bad-pool', 'bad', 3),
      template(ns, 'good', 'registry.test/closed-good:1', { annotations: { 'warmpool.dev/size': 'large' } }),
      warmPool(ns, 'good-pool', 'good', 3),
    );
    const pool = await eventually(
      async () => {
        const p = await getPool(cluster, ns, 'bad-pool');
        return condition(p, 'Ready')?.reason === 'InvalidTemplate' ? p : undefined;
      },
      { what: 'an InvalidTemplate condition' },
    );
    expect(condition(pool, 'Ready')?.message).toContain(
      'annotation warmpool.dev/net "gpu": must be one of none, egress',
    );
    expect(condition(pool, 'Degraded')).toMatchObject({ status: 'True', reason: 'InvalidTemplate' });
    await eventually(
      async () => {
        const events = JSON.parse(await kubectl(cluster, ['get', 'events', '-n', ns, '-o', 'json'])) as {
          items: Array<{ type: string; reason: string; message: string; involvedObject: { name: string } }>;
        };
        return events.items.some(
          (e) =>
            e.type === 'Warning' &&
            e.reason === 'InvalidTemplate' &&
            e.involvedObject.name === 'bad-pool' &&
            e.message.includes('warmpool.dev/net "gpu"'),
        );
      },
      { what: 'a Warning InvalidTemplate Event on the pool' },
    );
    // The good pool of the same nodes is pushed and filled; the bad key never reached a node.
    const goodLarge = good.replace('|small', '|large');
    await eventually(async () => (await fleet.targetsOf(goodLarge)).join(',') === '1,1,1', {
      what: "the good pool's targets",
    });
    for (const node of fleet.nodes)
      expect([...(await node.targets()).keys()].filter((id) => id.includes('closed-bad'))).toEqual([]);
  });

  it('marks a pool Degraded with the number of replicas it could not place, and clears it when they fit', async () => {
    const ns = await world.namespace('degraded');
    const key = keyOf('registry.test/degraded:1');
    // Earlier specs' pools are deleted; wait until the nodes hold nothing else, so all the room is this pool's.
    await eventually(async () => (await Promise.all(fleet.nodes.map((n) => n.targets()))).every((t) => t.size === 0), {
      what: 'empty nodes',
    });
    await apply(cluster, template(ns, 'tpl', 'registry.test/degraded:1'), warmPool(ns, 'pool', 'tpl', 100));
    const pool = await eventually(
      async () => {
        const p = await getPool(cluster, ns, 'pool');
        return condition(p, 'Degraded')?.status === 'True' ? p : undefined;
      },
      { what: 'Degraded' },
    );
    expect(condition(pool, 'Degraded')).toMatchObject({
      reason: 'InsufficientRoom',
      message: expect.stringContaining('40 of 100 replicas are not placed'),
    });
    // The status is written behind the run's back, so it may land before the last node's push has.
    await eventually(
      async () => JSON.stringify(await fleet.targetsOf(key)) === JSON.stringify([CAPACITY, CAPACITY, CAPACITY]),
      { what: 'every node filled to its room' },
    );
    await eventually(async () => (await getPool(cluster, ns, 'pool')).status?.readyReplicas === 60, {
      what: '60 warm',
    });
    expect(condition(await getPool(cluster, ns, 'pool'), 'Ready')).toMatchObject({
      status: 'False',
      reason: 'Filling',
      message: '60 of 100 replicas are warm; 40 cannot be placed',
    });

    await patch(cluster, 'swp', ns, 'pool', { spec: { replicas: 30 } });
    await eventually(async () => condition(await getPool(cluster, ns, 'pool'), 'Degraded')?.status === 'False', {
      what: 'no longer Degraded',
    });
    const reasons = await eventually(
      async () => {
        const events = JSON.parse(await kubectl(cluster, ['get', 'events', '-n', ns, '-o', 'json'])) as {
          items: Array<{ reason: string; type: string }>;
        };
        const seen = events.items.map((e) => `${e.type}/${e.reason}`);
        return seen.includes('Normal/AllPlaced') ? seen : undefined;
      },
      { what: 'the AllPlaced event' },
    );
    expect(reasons).toContain('Warning/InsufficientRoom');
  });

  it("moves a killed agent's share to the other nodes, and gives it back when the agent returns", async () => {
    const ns = await world.namespace('failover');
    const key = keyOf('registry.test/failover:1');
    await apply(cluster, template(ns, 'tpl', 'registry.test/failover:1'), warmPool(ns, 'pool', 'tpl', 6));
    await eventually(async () => (await fleet.targetsOf(key)).join(',') === '2,2,2', { what: 'targets 2,2,2' });

    const victim = fleet.nodes[2];
    if (victim === undefined) throw new Error('no third node');
    await victim.stopAgent('SIGKILL');
    const survivors = fleet.nodes.slice(0, 2);
    await eventually(
      async () =>
        (await Promise.all(survivors.map(async (n) => (await n.targets()).get(key) ?? 0))).join(',') === '3,3',
      { what: 'the share moved to the survivors' },
    );
    const metrics = await controlPlane?.registry.metrics();
    expect(metrics).toMatch(/warmpool_controlplane_nodes\{state="(failing|stale)"\} 1/);
    expect(metrics).toMatch(/warmpool_controlplane_nodes\{state="ready"\} 2/);

    await victim.startAgent();
    await eventually(async () => (await fleet.targetsOf(key)).join(',') === '2,2,2', {
      what: 'the share back on the returned node',
    });
    await eventually(async () => (await getPool(cluster, ns, 'pool')).status?.readyReplicas === 6, {
      what: 'status back to 6 ready',
    });
  });

  it('applies a replicas patch within one event, long before the next periodic run', async () => {
    // A 60 s interval: only the event path can explain anything happening within seconds.
    await leader({ driver: { intervalMs: 60_000, staleAfterMs: 120_000 } });
    const ns = await world.namespace('event');
    const key = keyOf('registry.test/event:1');
    await apply(cluster, template(ns, 'tpl', 'registry.test/event:1'), warmPool(ns, 'pool', 'tpl', 3));
    await eventually(async () => (await fleet.targetsOf(key)).join(',') === '1,1,1', {
      what: 'targets 1,1,1',
      timeoutMs: 10_000,
    });
    const started = Date.now();
    await patch(cluster, 'swp', ns, 'pool', { spec: { replicas: 6 } });
    await eventually(async () => (await fleet.targetsOf(key)).join(',') === '2,2,2', {
      what: 'targets 2,2,2',
      timeoutMs: 10_000,
    });
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('steps down and releases the lease when its token disappears, and campaigns again when it is back', async () => {
    let token: string | undefined = TOKEN;
    const rotating = await leader({ token: () => token });
    const ns = await world.namespace('rotate');
    const key = keyOf('registry.test/rotate:1');
    await apply(cluster, template(ns, 'tpl', 'registry.test/rotate:1'), warmPool(ns, 'pool', 'tpl', 3));
    await eventually(async () => (await fleet.targetsOf(key)).join(',') === '1,1,1', { what: 'targets 1,1,1' });

    token = undefined;
    await eventually(() => !rotating.isLeader(), { what: 'the replica to step down' });
    // The driver stops at once; the release is the election's own write after that.
    await eventually(async () => (await leaseHolder(cluster, system)) === '', { what: 'the lease released' });
    expect(rotating.ready()).toBe(false);
    await patch(cluster, 'swp', ns, 'pool', { spec: { replicas: 6 } });
    await sleep(1_500);
    expect(await fleet.targetsOf(key)).toEqual([1, 1, 1]);

    token = TOKEN;
    await eventually(() => rotating.isLeader(), { what: 'the replica to lead again' });
    await eventually(async () => (await fleet.targetsOf(key)).join(',') === '2,2,2', { what: 'targets 2,2,2' });
  });

  it('pushes nothing, does not campaign, and reports not ready without a fleet token', async () => {
    const tokenless = await replaceControlPlane({ token: '' });
    const ns = await world.namespace('notoken');
    await apply(cluster, template(ns, 'tpl', 'registry.test/notoken:1'), warmPool(ns, 'pool', 'tpl', 3));
    const readyz = await eventually(async () => {
      const res = await fetch(`${tokenless.url}/readyz`);
      return { status: res.status, body: (await res.json()) as { reasons?: string[] } };
    });
    expect(readyz.status).toBe(503);
    expect(readyz.body.reasons?.join(' ')).toContain('no fleet token');
    await sleep(2_000);
    expect(tokenless.isLeader()).toBe(false);
    expect(await fleet.absentEverywhere(keyOf('registry.test/notoken:1'))).toBe(true);
    expect((await getPool(cluster, ns, 'pool')).status).toBeUndefined();
  });
});
