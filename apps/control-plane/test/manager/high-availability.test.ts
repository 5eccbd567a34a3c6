// The control plane as processes (dist/main.js): two replicas on one Lease,
// one drives and the other takes over when it dies (after lease expiry on
// SIGKILL, at once on SIGTERM, which releases the lease); the generation
// keeps growing across leaders; and a replica without the fleet token is
// fail-closed. Real apiserver, real agents, fake-sandboxd.
import { NodeInventoryType, type NodeInventory } from '@warmpool/api';
import { eventually, sleep, template, warmPool, type TestCluster } from '@warmpool/harness';
import { ResourceClient } from '@warmpool/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Fleet } from '../support/fleet.js';
import { apply, getPool, kubectl, leaseHolder, patch } from '../support/objects.js';
import { leaders, PROCESS_LEASE, readiness, startReplica, type Replica } from '../support/replicas.js';
import { testWorld, type TestWorld } from '../support/world.js';

const TOKEN = 'fleet-token-for-ha-tests';
const KEY = 'registry.test/ha:1|none|small';

describe('control-plane replicas (processes) on one Lease', () => {
  let world: TestWorld;
  let cluster: TestCluster;
  let fleet: Fleet;
  let system: string;
  let ns: string;
  const replicas: Replica[] = [];

  async function replica(identity: string, options: { token?: boolean } = {}): Promise<Replica> {
    const started = await startReplica(
      world.replicaOptions(system, { lease: PROCESS_LEASE, setPoolsTimeout: '1s' }),
      identity,
      options,
    );
    replicas.push(started);
    return started;
  }

  async function appliedGenerations(): Promise<number[]> {
    const list = await new ResourceClient<NodeInventory>(cluster.kubeConfig, NodeInventoryType).list();
    return fleet.nodes.map(
      (node) => list.items.find((i) => i.metadata.name === node.name)?.status?.appliedGeneration ?? -1,
    );
  }

  async function stalePushesOnAgents(): Promise<number> {
    let total = 0;
    for (const node of fleet.nodes) {
      const match = /warmpool_agent_stale_generation_pushes_total (\d+)/.exec(await node.agentMetrics());
      total += Number(match?.[1] ?? 0);
    }
    return total;
  }

  beforeAll(async () => {
    world = await testWorld({ name: 'cp-ha', token: TOKEN, fleet: { count: 3 } });
    ({ cluster, fleet } = world);
    system = await world.namespace('warmpool-system');
    ns = await world.namespace('ha');
  });

  afterAll(() => world?.close());

  it('without a fleet token, logs it, does not campaign, reports not ready and pushes nothing', async () => {
    const tokenless = await replica('cp-no-token', { token: false });
    await apply(cluster, template(ns, 'tpl', 'registry.test/ha:1'), warmPool(ns, 'pool', 'tpl', 6));
    await sleep(2_500);
    const state = await readiness(tokenless);
    expect(state.status).toBe(503);
    expect(state.reasons.join(' ')).toContain('no fleet token');
    expect(
      tokenless.proc.logLines().some((l) => l['level'] === 'error' && String(l['msg']).includes('no fleet token')),
    ).toBe(true);
    expect((await leaseHolder(cluster, system)) ?? '').toBe('');
    expect(await fleet.absentEverywhere(KEY)).toBe(true);
    expect((await getPool(cluster, ns, 'pool')).status).toBeUndefined();
    await tokenless.proc.stop();
  });

  it('lets exactly one of two replicas drive, while both report ready', async () => {
    const a = await replica('cp-a');
    const b = await replica('cp-b');
    await eventually(async () => (await leaders([a, b])).length === 1, { what: 'one leader' });
    await eventually(async () => (await Promise.all([a, b].map(readiness))).every((s) => s.ready), {
      what: 'both ready',
    });
    await eventually(async () => (await fleet.targetsOf(KEY)).join(',') === '2,2,2', { what: 'targets 2,2,2' });
    // Watch a while: never two leaders, never none.
    for (let i = 0; i < 10; i++) {
      expect(await leaders([a, b])).toHaveLength(1);
      await sleep(200);
    }
    expect((await leaseHolder(cluster, system)) ?? '').toBe((await leaders([a, b]))[0]);
  });

  it('hands over to the standby after the lease expires when the leader is killed, and generations keep growing', async () => {
    const [a, b] = replicas.slice(-2) as [Replica, Replica];
    const [leaderId] = await leaders([a, b]);
    const leader = leaderId === a.identity ? a : b;
    const standby = leader === a ? b : a;
    const before = await appliedGenerations();
    expect(before.every((g) => g > 0)).toBe(true);

    await leader.proc.stop('SIGKILL');
    const killedAt = Date.now();
    await patch(cluster, 'swp', ns, 'pool', { spec: { replicas: 9 } });
    await eventually(async () => (await leaders([standby])).length === 1, {
      what: 'the standby to lead',
      timeoutMs: 30_000,
    });
    const takeoverMs = Date.now() - killedAt;
    // Nobody may take an unreleased lease before it expires (judged by the standby's own clock).
    expect(takeoverMs).toBeGreaterThanOrEqual(PROCESS_LEASE.duration - PROCESS_LEASE.retryPeriod * 2);
    await eventually(async () => (await fleet.targetsOf(KEY)).join(',') === '3,3,3', {
      what: 'targets 3,3,3 from the new leader',
    });
    await eventually(
      async () => {
        const after = await appliedGenerations();
        return after.every((g, i) => g > (before[i] as number)) ? after : undefined;
      },
      { what: 'every node to apply a higher generation' },
    );
    expect(await stalePushesOnAgents()).toBe(0);
  });

  it('hands over at once when the leader is stopped with SIGTERM, since it releases the lease', async () => {
    const [leaderId] = await leaders(replicas.filter((r) => r.proc.running));
    const leader = replicas.find((r) => r.identity === leaderId);
    if (leader === undefined) throw new Error('no leader');
    const standby = await replica('cp-c');
    await eventually(async () => (await readiness(standby)).ready, { what: 'the new standby ready' });
    const before = await appliedGenerations();

    const stoppedAt = Date.now();
    await leader.proc.stop('SIGTERM');
    expect(leader.proc.log()).toContain('released lease');
    await eventually(async () => (await leaders([standby])).length === 1, {
      what: 'the standby to lead',
      timeoutMs: 30_000,
    });
    // Well within the lease duration: the lease was released, not left to expire.
    expect(Date.now() - stoppedAt).toBeLessThan(PROCESS_LEASE.duration);

    await patch(cluster, 'swp', ns, 'pool', { spec: { replicas: 3 } });
    await eventually(async () => (await fleet.targetsOf(KEY)).join(',') === '1,1,1', {
      what: 'targets 1,1,1 from the new leader',
    });
    await eventually(async () => (await appliedGenerations()).every((g, i) => g > (before[i] as number)), {
      what: 'higher generations',
    });
    expect(await stalePushesOnAgents()).toBe(0);
    for (const r of replicas) {
      expect(r.proc.logLines().filter((l) => String(l['msg']).includes('refused our generation'))).toEqual([]);
    }
    const status = await eventually(
      async () => {
        const p = await getPool(cluster, ns, 'pool');
        return p.status?.replicas === 3 && p.status.readyReplicas === 3 ? p.status : undefined;
      },
      { what: 'status from the new leader' },
    );
    expect(status.observedGeneration).toBe((await getPool(cluster, ns, 'pool')).metadata.generation);
    const row = (await kubectl(cluster, ['get', 'swp', 'pool', '-n', ns, '--no-headers'])).trim().split(/\s+/);
    expect(row.slice(0, 3)).toEqual(['pool', '3', '3']);
  });
});
