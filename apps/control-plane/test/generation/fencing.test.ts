// Fencing and the trust in generations, with real processes: two control
// planes on one Lease, real agents in front of fake-sandboxd, a real
// apiserver. A leader paused with SIGSTOP while a standby takes over never
// gets a push applied after the standby's first; a forged number (in a
// NodeInventory, or PUT to an agent with the fleet token) takes only its own
// node out, with an Event whose recovery works; running out of generations
// fails readiness and does not spin.
import { NodeInventoryType, type NodeInventory } from '@warmpool/api';
import { eventually, sleep, template, warmPool, type KubectlResult, type TestCluster } from '@warmpool/harness';
import { ResourceClient } from '@warmpool/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { epochOf, MAX_EPOCH } from '../../src/generation/generation.js';
import type { Fleet, FleetNode } from '../support/fleet.js';
import { apply, kubectl, patch } from '../support/objects.js';
import {
  epochsContinued,
  epochsTaken,
  leaders,
  PROCESS_LEASE,
  readiness,
  startReplica,
  type Replica,
  type ReplicaOptions,
} from '../support/replicas.js';
import { testWorld, type TestWorld } from '../support/world.js';

const TOKEN = 'fleet-token-for-fencing-tests';
const KEY = 'registry.test/fence:1|none|small';
const FORGED = Number.MAX_SAFE_INTEGER;

describe('fencing and generation trust (processes)', () => {
  let world: TestWorld;
  let cluster: TestCluster;
  let fleet: Fleet;
  let system: string;
  let ns: string;
  let replicaOptions: ReplicaOptions;
  const replicas: Replica[] = [];

  async function replica(identity: string): Promise<Replica> {
    const r = await startReplica(replicaOptions, identity);
    replicas.push(r);
    return r;
  }

  async function theLeader(): Promise<{ leader: Replica; standby: Replica }> {
    const running = replicas.filter((r) => r.proc.running);
    const [id] = await eventually(
      async () => {
        const ids = await leaders(running);
        return ids.length === 1 ? ids : undefined;
      },
      { what: 'one leader', timeoutMs: 30_000 },
    );
    const leader = running.find((r) => r.identity === id) as Replica;
    const standby = running.find((r) => r !== leader);
    if (standby === undefined) throw new Error('no standby');
    return { leader, standby };
  }

  async function inventory(name: string): Promise<NodeInventory> {
    return new ResourceClient<NodeInventory>(cluster.kubeConfig, NodeInventoryType).get({ name });
  }

  async function nodeEvents(node: string): Promise<Array<{ reason: string; message: string }>> {
    const out = await kubectl(cluster, [
      'get',
      'events',
      '-A',
      '--field-selector',
      `involvedObject.name=${node},involvedObject.kind=NodeInventory`,
      '-o',
      'json',
    ]);
    return (JSON.parse(out) as { items: Array<{ reason: string; message: string }> }).items;
  }

  /** Writes `appliedGeneration` into a node's NodeInventory status, as someone holding its agent's token could. */
  async function forgeAppliedGeneration(node: FleetNode, appliedGeneration: number): Promise<KubectlResult> {
    return cluster.kubectl([
      'patch',
      'nodeinventory',
      node.name,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { appliedGeneration } }),
    ]);
  }

  /**
   * The recovery a NodeLeftPlacement Event names, then the agent restarted (it
   * reads its applied generation back from its NodeInventory); the pool, scaled
   * to `replicas`, spreads over every node again.
   */
  async function recover(victim: FleetNode, replicas: number, targets: string): Promise<void> {
    await kubectl(cluster, [
      'annotate',
      'nodeinventory',
      victim.name,
      `warmpool.dev/reset-applied-generation=${FORGED}`,
      '--overwrite',
    ]);
    await victim.stopAgent('SIGKILL');
    await victim.startAgent();
    await patch(cluster, 'swp', ns, 'pool', { spec: { replicas } });
    await eventually(async () => (await fleet.targetsOf(KEY)).join(',') === targets, {
      what: 'the recovered node back in placement',
      timeoutMs: 30_000,
    });
  }

  /**
   * A new leadership term: the leader hands over (SIGTERM releases the Lease), and a fresh standby is started behind.
   */
  async function newTerm(name: string): Promise<{ leader: Replica; standby: Replica }> {
    const { leader } = await theLeader();
    await leader.proc.stop('SIGTERM');
    await replica(name);
    return theLeader();
  }

  beforeAll(async () => {
    world = await testWorld({ name: 'cp-fencing', token: TOKEN, fleet: { count: 3, agentLogLevel: 'info' } });
    ({ cluster, fleet } = world);
    system = await world.namespace('warmpool-system');
    ns = await world.namespace('fencing');
    replicaOptions = world.replicaOptions(system, { setPoolsTimeout: '1s' });
    await apply(cluster, template(ns, 'tpl', 'registry.test/fence:1'), warmPool(ns, 'pool', 'tpl', 6));
    await replica('cp-a');
    await replica('cp-b');
    await eventually(async () => (await fleet.targetsOf(KEY)).join(',') === '2,2,2', {
      what: 'targets 2,2,2',
      timeoutMs: 30_000,
    });
  }, 120_000);

  afterAll(() => world?.close());

  it('never lets a node apply a push of a leader paused past its lease once the new leader has pushed', async () => {
    const { leader: paused, standby } = await theLeader();
    const pausedEpochs = epochsTaken(paused);
    expect(pausedEpochs.length).toBeGreaterThan(0);

    paused.proc.kill('SIGSTOP');
    try {
      await patch(cluster, 'swp', ns, 'pool', { spec: { replicas: 9 } });
      await eventually(async () => (await leaders([standby])).length === 1, {
        what: 'the standby to lead',
        timeoutMs: 30_000,
      });
      await eventually(async () => (await fleet.targetsOf(KEY)).join(',') === '3,3,3', {
        what: 'targets 3,3,3 from the new leader',
        timeoutMs: 30_000,
      });
    } finally {
      paused.proc.kill('SIGCONT');
    }
    // The resumed one sees the same pool change in its caches and would push it; watch a while.
    for (let i = 0; i < 20; i++) {
      expect((await fleet.targetsOf(KEY)).join(',')).toBe('3,3,3');
      await sleep(250);
    }
    await eventually(async () => (await readiness(paused)).status === 200, { what: 'the resumed replica to answer' });
    expect(await leaders([paused, standby])).toEqual([standby.identity]);

    const newEpochs = new Set(epochsTaken(standby));
    const oldEpochs = new Set(epochsTaken(paused));
    // The deposed one took no epoch after resuming (it used to escalate on every 409).
    expect([...oldEpochs]).toEqual(pausedEpochs);
    const applied = fleet.nodes.flatMap((node) => node.appliedPushes());
    const firstNew = Math.min(...applied.filter((a) => newEpochs.has(epochOf(a.generation))).map((a) => a.at));
    expect(Number.isFinite(firstNew)).toBe(true);
    const lateOld = applied.filter((a) => oldEpochs.has(epochOf(a.generation)) && a.at >= firstNew);
    expect(lateOld).toEqual([]);
    expect(paused.proc.log()).toContain('stepping down');
  }, 180_000);

  it('continues its epoch when it steps down for a late renewal and takes its own Lease back: no node is pushed a new epoch', async () => {
    const { leader, standby } = await theLeader();
    await standby.proc.stop('SIGTERM'); // alone: the Lease can only come back to the leader
    const [epoch] = epochsTaken(leader).slice(-1);
    const stepDowns = (): number => leader.proc.logLines().filter((l) => l['msg'] === 'stepping down').length;
    const before = stepDowns();
    const pausedAt = Date.now();

    leader.proc.kill('SIGSTOP'); // past the renew deadline: it must stop leading the moment it runs again
    await sleep(PROCESS_LEASE.renewDeadline + 500);
    leader.proc.kill('SIGCONT');
    await eventually(async () => stepDowns() > before && (await leaders([leader])).length === 1, {
      what: 'a step-down, then the same replica leading again',
      timeoutMs: 30_000,
    });
    await patch(cluster, 'swp', ns, 'pool', { spec: { replicas: 12 } });
    await eventually(async () => (await fleet.targetsOf(KEY)).join(',') === '4,4,4', {
      what: 'targets 4,4,4 from the new term',
      timeoutMs: 30_000,
    });

    expect(epochsContinued(leader)).toEqual([epoch]);
    expect(epochsTaken(leader).slice(-1)).toEqual([epoch]);
    const since = fleet.nodes.flatMap((node) => node.appliedPushes()).filter((a) => a.at >= pausedAt);
    expect(since.length).toBeGreaterThan(0);
    expect(new Set(since.map((a) => epochOf(a.generation)))).toEqual(new Set([epoch]));

    await patch(cluster, 'swp', ns, 'pool', { spec: { replicas: 9 } });
    await eventually(async () => (await fleet.targetsOf(KEY)).join(',') === '3,3,3', {
      what: 'targets 3,3,3 again',
      timeoutMs: 30_000,
    });
    await replica('cp-standby'); // a standby again, for what follows
  }, 120_000);

  it('takes only the node whose NodeInventory shows a forged generation out of placement, at the next term, with an Event whose recovery works', async () => {
    const victim = fleet.nodes[2] as FleetNode;
    // The CRD bounds the number to the largest generation a control plane issues.
    const beyond = await forgeAppliedGeneration(victim, FORGED + 1);
    expect(beyond.code).not.toBe(0);
    expect(beyond.stderr).toContain('appliedGeneration');
    // The agent stopped, its inventory forged, the agent restarted: it reads the forged number back and refuses every
    // push below it.
    await victim.stopAgent('SIGKILL');
    const forged = await forgeAppliedGeneration(victim, FORGED);
    expect(forged.code, forged.stderr).toBe(0);
    await victim.startAgent();
    expect((await inventory(victim.name)).status?.appliedGeneration).toBe(FORGED);

    const { leader } = await newTerm('cp-c');
    await patch(cluster, 'swp', ns, 'pool', { spec: { replicas: 4 } });
    await eventually(async () => (await fleet.targetsOf(KEY)).slice(0, 2).join(',') === '2,2', {
      what: 'the two honest nodes to carry the pool',
      timeoutMs: 30_000,
    });
    const events = await eventually(
      async () => {
        const found = (await nodeEvents(victim.name)).filter(
          (e) => e.reason === 'NodeLeftPlacement' && e.message.includes(String(FORGED)),
        );
        return found.length > 0 ? found : undefined;
      },
      { what: 'a NodeLeftPlacement Event for the forged node' },
    );
    expect(events[0]?.message).toContain(
      `kubectl annotate nodeinventory ${victim.name} warmpool.dev/reset-applied-generation=${FORGED}`,
    );
    // The term took an ordinary epoch, not the last one.
    expect(Math.max(...epochsTaken(leader))).toBeLessThan(100);
    expect((await readiness(leader)).ready).toBe(true);

    // No spin: over two seconds the leader logs a handful of lines, not thousands.
    const before = leader.proc.logLines().length;
    await sleep(2_000);
    expect(leader.proc.logLines().length - before).toBeLessThan(200);

    await recover(victim, 6, '2,2,2');
    expect(epochOf((await inventory(victim.name)).status?.appliedGeneration ?? FORGED)).toBeLessThan(100);
  }, 180_000);

  it('refuses a generation beyond the largest at the agent, and takes only the node a forged PUT froze out of placement', async () => {
    const victim = fleet.nodes[1] as FleetNode;
    const put = (generation: number): Promise<Response> =>
      fetch(`${victim.agentUrl}/v1/pools`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ generation, pools: [] }),
      });
    const beyond = await put(FORGED + 1);
    expect(beyond.status).toBe(400);
    await beyond.body?.cancel();

    const forged = await put(FORGED);
    expect(forged.status).toBe(200);
    await forged.body?.cancel();
    const { leader } = await theLeader();
    await patch(cluster, 'swp', ns, 'pool', { spec: { replicas: 8 } });
    await eventually(
      async () => {
        const targets = await fleet.targetsOf(KEY);
        return targets[0] === 4 && targets[2] === 4;
      },
      { what: 'the other two nodes to carry the pool', timeoutMs: 30_000 },
    );
    await eventually(
      async () =>
        (await nodeEvents(victim.name)).some(
          (e) => e.reason === 'NodeLeftPlacement' && e.message.includes(String(FORGED)),
        ),
      { what: 'the Event' },
    );
    expect(await leaders(replicas.filter((r) => r.proc.running))).toEqual([leader.identity]);

    await eventually(async () => (await inventory(victim.name)).status?.appliedGeneration === FORGED, {
      what: 'the agent to publish the forged number',
    });
    await recover(victim, 9, '3,3,3');
  }, 180_000);

  it('reports not ready and does not spin when the stored epoch leaves no generation', async () => {
    const { leader } = await theLeader();
    await kubectl(cluster, [
      'annotate',
      'lease',
      'warmpool-control-plane',
      '-n',
      system,
      `warmpool.dev/generation-epoch=${MAX_EPOCH}`,
      '--overwrite',
    ]);
    const { leader: next } = await newTerm('cp-d');
    expect(next).not.toBe(leader);
    const state = await eventually(
      async () => {
        const s = await readiness(next);
        return s.status === 503 ? s : undefined;
      },
      { what: 'the new leader to report not ready' },
    );
    expect(state.reasons.join(' ')).toContain('no generation left');

    const before = next.proc.logLines().length;
    await sleep(3_000);
    const lines = next.proc.logLines().slice(before);
    expect(lines.length).toBeLessThan(300);
    expect(lines.filter((l) => String(l['msg']).includes('no generation left')).length).toBeLessThan(5);
    // Nothing pushed meanwhile.
    await patch(cluster, 'swp', ns, 'pool', { spec: { replicas: 3 } });
    await sleep(1_500);
    expect((await fleet.targetsOf(KEY)).join(',')).toBe('3,3,3');
  }, 180_000);
});
