// The NodeInventory publisher against a real kube-apiserver (etcd included),
// with a real fake-sandboxd behind the agent.
import { randomBytes } from 'node:crypto';
import {
  KubeNodeType,
  NodeInventoryType,
  type ClaimResponse,
  type KubeObject,
  type NodeInventory,
  type NodeInventoryStatus,
} from '@warmpool/api';
import { eventually, Freezer, startCluster, type TestCluster } from '@warmpool/harness';
import { ResourceClient } from '@warmpool/kube';
import {
  KubeInventoryWriter,
  RESET_APPLIED_GENERATION,
  type InventoryIdentity,
  type InventoryWriter,
  type NodeAgentOptions,
} from '@warmpool/node-agent';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeSandboxd } from '@warmpool/fake-sandboxd';
import { call, FLEET_TOKEN, spawnAgent, startNode, type Node } from './helpers.js';

/** The real writer, counting its calls in flight and the writes that reach the apiserver. */
class CountingWriter implements InventoryWriter {
  readonly inner: InventoryWriter;
  /** Calls not yet settled. */
  pending = 0;
  statusWrites = 0;
  objectWrites = 0;

  constructor(inner: InventoryWriter) {
    this.inner = inner;
  }

  readStatus(name: string, signal?: AbortSignal): ReturnType<InventoryWriter['readStatus']> {
    return this.#counted(this.inner.readStatus(name, signal));
  }

  nodeOwner(name: string, signal?: AbortSignal): ReturnType<InventoryWriter['nodeOwner']> {
    return this.#counted(this.inner.nodeOwner(name, signal));
  }

  async applyObject(identity: InventoryIdentity, signal?: AbortSignal): Promise<void> {
    await this.#counted(this.inner.applyObject(identity, signal));
    this.objectWrites += 1;
  }

  async applyStatus(
    name: string,
    status: NodeInventoryStatus,
    signal?: AbortSignal,
  ): ReturnType<InventoryWriter['applyStatus']> {
    const outcome = await this.#counted(this.inner.applyStatus(name, status, signal));
    if (outcome !== 'missing') this.statusWrites += 1;
    return outcome;
  }

  async #counted<T>(call: Promise<T>): Promise<T> {
    this.pending += 1;
    try {
      return await call;
    } finally {
      this.pending -= 1;
    }
  }
}

let cluster: TestCluster;
let inventories: ResourceClient<NodeInventory>;
const open: Node[] = [];
/** Processes a spec stopped: running again before anything else in the teardown, even after a spec timed out. */
const frozen: Freezer[] = [];

beforeAll(async () => {
  cluster = await startCluster({ name: 'node-agent' });
  inventories = new ResourceClient<NodeInventory>(cluster.kubeConfig, NodeInventoryType);
});

afterAll(async () => {
  await cluster?.stop();
});

afterEach(async () => {
  for (const process of frozen.splice(0)) process.thaw();
  for (const n of open.splice(0).reverse()) await n.close();
  await cluster.startApiserver();
});

function nodeName(): string {
  return `node-${randomBytes(4).toString('hex')}`;
}

/** An agent publishing `name`'s inventory; unless told not to, waits until it has read back its generation. */
async function agentFor(
  name: string,
  options: Partial<NodeAgentOptions> = {},
  writer?: InventoryWriter,
  waitForRecovery = true,
): Promise<Node> {
  const n = await startNode({
    nodeName: name,
    inventory: writer ?? new KubeInventoryWriter(cluster.kubeConfig, { timeoutMs: 2_000 }),
    advertiseAddress: '10.0.0.7:7071',
    publishIntervalMs: 60_000,
    minPublishGapMs: 300,
    publishRetryInitialMs: 100,
    publishRetryMaxMs: 500,
    ...options,
  });
  open.push(n);
  if (waitForRecovery)
    await eventually(() => n.agent.generations.recovered, { timeoutMs: 10_000, what: 'the generation read back' });
  return n;
}

async function inventoryOf(name: string): Promise<NodeInventory | undefined> {
  try {
    return await inventories.get({ name });
  } catch {
    return undefined;
  }
}

async function statusOf(name: string): Promise<NodeInventoryStatus | undefined> {
  return (await inventoryOf(name))?.status;
}

describe('NodeInventory publisher', () => {
  it("publishes the node's inventory at start: spec, pools, claimed, capacity and generation", async () => {
    const name = nodeName();
    const n = await agentFor(name, { capacity: 48 });
    await call(n.url, 'PUT', '/v1/pools', { body: { generation: 3, pools: [{ template: 'img', warm: 2 }] } });
    await eventually(async () => (await call(n.url, 'GET', '/readyz', { token: null })).status === 200, {
      timeoutMs: 10_000,
      what: 'ready',
    });
    const inventory = await eventually(
      async () => {
        const found = await inventoryOf(name);
        return found?.status?.appliedGeneration === 3 ? found : undefined;
      },
      { timeoutMs: 10_000, what: 'the inventory' },
    );
    expect(inventory.spec).toEqual({ nodeName: name, address: '10.0.0.7:7071' });
    expect(inventory.status).toMatchObject({
      pools: [
        {
          template: 'img',
          net: 'none',
          size: 'small',
          target: 2,
          warm: expect.any(Number),
          refilling: expect.any(Number),
        },
      ],
      claimed: 0,
      capacity: 48,
      draining: false,
      atCapacity: false,
      appliedGeneration: 3,
    });
    expect(Math.abs(Date.parse(inventory.status?.publishedAt ?? '') - Date.now())).toBeLessThan(30_000);
    const managers = (inventory.metadata as { managedFields?: Array<{ manager: string }> }).managedFields?.map(
      (f) => f.manager,
    );
    expect(managers).toContain('warmpool-node-agent');
  });

  it('puts its spec back on its next publish when someone else re-pointed it, and counts it', async () => {
    const name = nodeName();
    const n = await agentFor(name, { publishIntervalMs: 500 });
    await eventually(async () => (await inventoryOf(name))?.spec?.address === '10.0.0.7:7071', {
      timeoutMs: 10_000,
      what: 'the inventory',
    });
    await cluster.kubectl([
      'patch',
      'nodeinventory',
      name,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { address: '127.0.9.9:7443' } }),
    ]);
    expect((await inventoryOf(name))?.spec).toEqual({ nodeName: name, address: '127.0.9.9:7443' });
    await eventually(async () => (await inventoryOf(name))?.spec?.address === '10.0.0.7:7071', {
      timeoutMs: 10_000,
      what: 'the spec restored',
    });
    expect((await inventoryOf(name))?.spec).toEqual({ nodeName: name, address: '10.0.0.7:7071' });
    expect(await n.agent.metrics.render()).toMatch(/^warmpool_agent_inventory_spec_restored_total [1-9]/m);
  });

  it('is owned by its Node when the Node exists, so it goes with it', async () => {
    const name = nodeName();
    const nodes = new ResourceClient<KubeObject>(cluster.kubeConfig, KubeNodeType);
    const node = await nodes.create({ apiVersion: 'v1', kind: 'Node', metadata: { name } });
    await agentFor(name);
    const inventory = await eventually(() => inventoryOf(name), { timeoutMs: 10_000, what: 'the inventory' });
    expect(inventory.metadata.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Node', name, uid: node.metadata?.uid },
    ]);
  });

  it('has no owner while its Node does not exist, and gains one when the Node appears', async () => {
    const name = nodeName();
    const n = await agentFor(name, { publishIntervalMs: 300 });
    const orphan = await eventually(() => inventoryOf(name), { timeoutMs: 10_000, what: 'the inventory' });
    expect(orphan.metadata.ownerReferences).toBeUndefined();
    const node = await new ResourceClient<KubeObject>(cluster.kubeConfig, KubeNodeType).create({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name },
    });
    await eventually(async () => (await inventoryOf(name))?.metadata.ownerReferences?.[0]?.uid === node.metadata?.uid, {
      timeoutMs: 10_000,
      what: 'the owner reference',
    });
    expect(n.agent.notReadyReasons()).toEqual([]);
  });

  it('publishes a significant change soon after it happens, debounced, and never once per claim', async () => {
    const name = nodeName();
    const writer = new CountingWriter(new KubeInventoryWriter(cluster.kubeConfig));
    const n = await agentFor(name, { minPublishGapMs: 1_000 }, writer);
    await call(n.url, 'PUT', '/v1/pools', { body: { generation: 1, pools: [{ template: 'img', warm: 50 }] } });
    await eventually(() => n.sandboxd.core.info().pools[0]?.warm === 50, {
      timeoutMs: 15_000,
      what: 'a full warm pool',
    });
    await eventually(async () => ((await statusOf(name))?.pools?.[0]?.warm ?? 0) > 0, {
      timeoutMs: 10_000,
      what: 'the warm pool published',
    });
    // The node's first claim teaches the agent its owner address: one write, once.
    expect((await call(n.url, 'POST', '/v1/claim', { body: { template: 'img' } })).status).toBe(200);
    await eventually(async () => (await statusOf(name))?.ownerAddr !== undefined, {
      timeoutMs: 10_000,
      what: 'the owner address published',
    });
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const before = writer.statusWrites;

    for (let i = 0; i < 30; i++) {
      expect((await call(n.url, 'POST', '/v1/claim', { body: { template: 'img' } })).status).toBe(200);
    }
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    // Warm never reached 0 (refill keeps up) and nothing else significant happened: no write at all.
    expect(writer.statusWrites - before).toBe(0);

    await call(n.url, 'PUT', '/v1/pools', {
      body: {
        generation: 2,
        pools: [
          { template: 'img', warm: 50 },
          { template: 'other', warm: 1 },
        ],
      },
    });
    await call(n.url, 'POST', '/v1/drain');
    await eventually(
      async () => {
        const status = await statusOf(name);
        return status?.draining === true && status.pools?.length === 2 && status.appliedGeneration === 2;
      },
      { timeoutMs: 10_000, what: 'the new pool set and drain published' },
    );
    // Two significant changes within the gap: at most one write for each gap, not one per change or per claim.
    expect(writer.statusWrites - before).toBeLessThanOrEqual(3);
  });

  it("writes a later push of the same leader term with the node's next write, and a new term's first push at once", async () => {
    const name = nodeName();
    const writer = new CountingWriter(new KubeInventoryWriter(cluster.kubeConfig));
    const n = await agentFor(name, { minPublishGapMs: 300 }, writer);
    /** Generation `counter` of leadership epoch `epoch`, as a control plane numbers them. */
    const generation = (epoch: number, counter: number): number => epoch * 2 ** 21 + counter;
    const push = async (g: number, warm: number): Promise<void> => {
      const answer = await call(n.url, 'PUT', '/v1/pools', {
        body: { generation: g, pools: [{ template: 'img', warm }] },
      });
      expect(answer.status).toBe(200);
    };

    await push(generation(3, 0), 2);
    await eventually(
      async () => {
        const status = await statusOf(name);
        return status?.appliedGeneration === generation(3, 0) && (status.pools?.[0]?.warm ?? 0) > 0;
      },
      { timeoutMs: 10_000, what: "the term's first push and its warm pool published" },
    );
    await eventually(() => n.sandboxd.core.info().pools[0]?.warm === 2, { timeoutMs: 10_000, what: 'a full pool' });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const before = writer.statusWrites;

    // A later round of the same term: its answer tells the control plane; warm never reaches 0; nothing is written.
    await push(generation(3, 1), 3);
    await eventually(() => n.sandboxd.core.info().pools[0]?.warm === 3, { timeoutMs: 10_000, what: 'the refill' });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(writer.statusWrites - before).toBe(0);
    expect((await statusOf(name))?.appliedGeneration).toBe(generation(3, 0));

    // The node's next write (here the one a drain brings) carries the generation and the target.
    await call(n.url, 'POST', '/v1/drain');
    const drained = await eventually(
      async () => {
        const status = await statusOf(name);
        return status?.draining === true ? status : undefined;
      },
      { timeoutMs: 10_000, what: 'the drain published' },
    );
    expect(drained.appliedGeneration).toBe(generation(3, 1));
    expect(drained.pools?.[0]?.target).toBe(3);

    // A new term's first push is the floor a restarted agent reads back: written at once, though it moves no target.
    await push(generation(4, 0), 3);
    await eventually(async () => (await statusOf(name))?.appliedGeneration === generation(4, 0), {
      timeoutMs: 10_000,
      what: "the new term's generation published",
    });
  });

  it('reads the applied generation back after a restart, so a stale push is refused even by a fresh agent', async () => {
    const name = nodeName();
    const first = await agentFor(name);
    expect(
      (await call(first.url, 'PUT', '/v1/pools', { body: { generation: 7, pools: [{ template: 'img', warm: 1 }] } }))
        .status,
    ).toBe(200);
    await eventually(async () => (await statusOf(name))?.appliedGeneration === 7, {
      timeoutMs: 10_000,
      what: 'generation 7 published',
    });
    await first.close();
    open.splice(open.indexOf(first), 1);

    const second = await agentFor(name);
    await eventually(() => second.agent.generations.recovered, { timeoutMs: 10_000, what: 'recovery' });
    expect(second.agent.generations.applied).toBe(7);
    const stale = await call<{ error: string; appliedGeneration: number }>(second.url, 'PUT', '/v1/pools', {
      body: { generation: 6, pools: [] },
    });
    expect(stale).toMatchObject({ status: 409, body: { appliedGeneration: 7 } });
    expect((await call(second.url, 'PUT', '/v1/pools', { body: { generation: 8, pools: [] } })).status).toBe(200);
  });

  it('starts from 0 instead of a read-back number only when the reset annotation names exactly that number', async () => {
    const name = nodeName();
    const forged = Number.MAX_SAFE_INTEGER;
    const first = await agentFor(name);
    expect((await call(first.url, 'PUT', '/v1/pools', { body: { generation: forged, pools: [] } })).status).toBe(200);
    await eventually(async () => (await statusOf(name))?.appliedGeneration === forged, {
      timeoutMs: 10_000,
      what: 'the forged number published',
    });
    await first.close();
    open.splice(open.indexOf(first), 1);

    // An annotation naming another number changes nothing.
    const annotate = async (value: string): Promise<void> => {
      const current = await inventories.get({ name });
      await inventories.replace({
        ...current,
        metadata: {
          ...current.metadata,
          annotations: { ...current.metadata.annotations, [RESET_APPLIED_GENERATION]: value },
        },
      });
    };
    await annotate('12');
    const second = await agentFor(name);
    expect(second.agent.generations.applied).toBe(forged);
    await second.close();
    open.splice(open.indexOf(second), 1);

    await annotate(String(forged));
    const third = await agentFor(name);
    expect(third.agent.generations.applied).toBe(0);
    await eventually(async () => (await statusOf(name))?.appliedGeneration === 0, {
      timeoutMs: 10_000,
      what: '0 published over the forged number',
    });
    expect((await call(third.url, 'PUT', '/v1/pools', { body: { generation: 5, pools: [] } })).status).toBe(200);
    await eventually(async () => (await statusOf(name))?.appliedGeneration === 5, {
      timeoutMs: 10_000,
      what: 'the next push published',
    });
    await third.close();
    open.splice(open.indexOf(third), 1);

    // Inert once a push moved the number: a restart keeps 5.
    const fourth = await agentFor(name);
    expect(fourth.agent.generations.applied).toBe(5);
  });

  it('refuses a generation beyond the largest a control plane issues (400), changing nothing', async () => {
    const name = nodeName();
    const n = await agentFor(name);
    const beyond = await call<{ error: string }>(n.url, 'PUT', '/v1/pools', {
      body: { generation: Number.MAX_SAFE_INTEGER + 1, pools: [] },
    });
    expect(beyond.status).toBe(400);
    expect(n.agent.generations.applied).toBeUndefined();
  });

  it('keeps serving claims while the apiserver is down, and publishes what changed once it is back', async () => {
    const name = nodeName();
    const n = await agentFor(name);
    await call(n.url, 'PUT', '/v1/pools', { body: { generation: 1, pools: [{ template: 'img', warm: 3 }] } });
    await eventually(async () => ((await statusOf(name))?.pools?.[0]?.warm ?? 0) > 0, {
      timeoutMs: 10_000,
      what: 'the warm pool published',
    });

    await cluster.stopApiserver();
    for (let i = 0; i < 5; i++) {
      expect((await call(n.url, 'POST', '/v1/claim', { body: { template: 'img' } })).status).toBe(200);
    }
    expect(
      (await call(n.url, 'PUT', '/v1/pools', { body: { generation: 2, pools: [{ template: 'img', warm: 4 }] } }))
        .status,
    ).toBe(200);
    await eventually(
      async () =>
        /warmpool_agent_inventory_publish_failures_total [1-9]/.test(
          (await call<string>(n.url, 'GET', '/metrics', { token: null })).body,
        ),
      { timeoutMs: 10_000, what: 'a failed publish' },
    );
    expect((await call(n.url, 'POST', '/v1/claim', { body: { template: 'img' } })).status).toBe(200);
    expect((await call(n.url, 'GET', '/readyz', { token: null })).status).toBe(200);

    await cluster.startApiserver();
    const status = await eventually(
      async () => {
        const found = await statusOf(name);
        return found?.appliedGeneration === 2 ? found : undefined;
      },
      { timeoutMs: 20_000, what: 'the change published after the outage' },
    );
    expect(status.pools?.[0]?.target).toBe(4);
    expect(status.claimed).toBe(6);
  });

  it('closes without waiting for a write to an apiserver that stopped answering', async () => {
    const name = nodeName();
    // The write's own timeout is far beyond this test's: only the close's abort can end it in time.
    const writer = new CountingWriter(new KubeInventoryWriter(cluster.kubeConfig, { timeoutMs: 120_000 }));
    const n = await agentFor(name, {}, writer);
    await call(n.url, 'PUT', '/v1/pools', { body: { generation: 1, pools: [{ template: 'img', warm: 3 }] } });
    await eventually(async () => ((await statusOf(name))?.pools?.[0]?.warm ?? 0) > 0, {
      timeoutMs: 10_000,
      what: 'the warm pool published',
    });

    const apiserver = new Freezer(() => {
      const pid = cluster.pids().apiserver;
      if (pid === undefined) throw new Error('the apiserver is not running');
      return pid;
    });
    frozen.push(apiserver);
    await apiserver.freeze();
    await call(n.url, 'PUT', '/v1/pools', { body: { generation: 2, pools: [{ template: 'img', warm: 5 }] } });
    // A call in flight, whichever: one begun just before the freeze is as stuck as the push's (which waits behind it).
    await eventually(() => writer.pending > 0, { timeoutMs: 10_000, what: 'a write to the stopped apiserver' });
    open.splice(open.indexOf(n), 1);
    await n.close();
  }, 20_000);

  it('starting while the apiserver is down: serves claims, refuses SetPools until the generation is read back, then catches up', async () => {
    const name = nodeName();
    await cluster.stopApiserver();
    const n = await agentFor(name, {}, undefined, false);
    const refused = await call<{ error: string }>(n.url, 'PUT', '/v1/pools', {
      body: { generation: 1, pools: [{ template: 'img', warm: 1 }] },
    });
    expect(refused.status).toBe(503);
    expect(refused.body.error).toMatch(/last applied generation is not known yet/);
    expect((await call(n.url, 'GET', '/v1/info')).status).toBe(200);
    const ready = await call<{ reasons: string[] }>(n.url, 'GET', '/readyz', { token: null });
    expect(ready.status).toBe(503);
    expect(ready.body.reasons.join()).toMatch(/NodeInventory not published yet/);

    await cluster.startApiserver();
    await eventually(async () => (await call(n.url, 'GET', '/readyz', { token: null })).status === 200, {
      timeoutMs: 20_000,
      what: 'ready after the outage',
    });
    expect(
      (await call(n.url, 'PUT', '/v1/pools', { body: { generation: 1, pools: [{ template: 'img', warm: 1 }] } }))
        .status,
    ).toBe(200);
    expect(await inventoryOf(name)).toBeDefined();
  });

  it('publishes the owner address its first claim answer carried', async () => {
    const name = nodeName();
    const n = await agentFor(name);
    await eventually(async () => (await statusOf(name))?.publishedAt !== undefined, {
      timeoutMs: 10_000,
      what: 'the first publish',
    });
    expect((await statusOf(name))?.ownerAddr, 'unknown before any claim (fake-sandboxd info names none)').toBe(
      undefined,
    );
    const claim = await call<ClaimResponse>(n.url, 'POST', '/v1/claim', { body: { template: 'img' } });
    expect(claim.status).toBe(200);
    expect(claim.body.owner_addr).toBe(new URL(n.sandboxd.url).host);
    const published = await eventually(async () => (await statusOf(name))?.ownerAddr, {
      timeoutMs: 10_000,
      what: 'status.ownerAddr published',
    });
    expect(published).toBe(claim.body.owner_addr);
  });

  it('keeps the owner address across a restart against the same sandboxd, whose info names none', async () => {
    const name = nodeName();
    const sandboxd = await startFakeSandboxd({ apiToken: FLEET_TOKEN, coldBootMs: 20 });
    try {
      const first = await agentFor(name, { sandboxdUrl: sandboxd.url });
      const claim = await call<ClaimResponse>(first.url, 'POST', '/v1/claim', { body: { template: 'img' } });
      expect(claim.status).toBe(200);
      await eventually(async () => (await statusOf(name))?.ownerAddr === claim.body.owner_addr, {
        timeoutMs: 10_000,
        what: 'status.ownerAddr published by the first agent',
      });
      const before = (await statusOf(name))?.publishedAt ?? '';
      await first.close();
      open.splice(open.indexOf(first), 1);

      // A fresh agent (nothing learned: no claim passes through it) writes its own status at start.
      const second = await agentFor(name, { sandboxdUrl: sandboxd.url });
      const status = await eventually(
        async () => {
          const found = await statusOf(name);
          return second.agent.notReadyReasons().length === 0 && found?.publishedAt !== before ? found : undefined;
        },
        { timeoutMs: 10_000, what: "the second agent's first publish" },
      );
      expect(status.ownerAddr).toBe(claim.body.owner_addr);
      // Still there on its later writes, which are whole-status applies.
      expect((await call(second.url, 'PUT', '/v1/pools', { body: { generation: 1, pools: [] } })).status).toBe(200);
      await eventually(async () => (await statusOf(name))?.appliedGeneration === 1, {
        timeoutMs: 10_000,
        what: 'generation 1 published',
      });
      expect((await statusOf(name))?.ownerAddr).toBe(claim.body.owner_addr);
    } finally {
      await sandboxd.close();
    }
  });

  it('puts the inventory back when someone deletes it', async () => {
    const name = nodeName();
    await agentFor(name, { publishIntervalMs: 300 });
    await eventually(() => inventoryOf(name), { timeoutMs: 10_000, what: 'the inventory' });
    await inventories.delete({ name });
    await eventually(async () => (await inventoryOf(name))?.status?.publishedAt !== undefined, {
      timeoutMs: 10_000,
      what: 'the inventory back',
    });
  });

  it('runs as a process with --kubeconfig, and on SIGTERM exits 0 leaving its inventory in place', async () => {
    const name = nodeName();
    const sandboxd = await startFakeSandboxd({ apiToken: FLEET_TOKEN, coldBootMs: 20 });
    const proc = await spawnAgent(
      [
        '--sandboxd-url',
        sandboxd.url,
        '--kubeconfig',
        cluster.kubeconfigPath,
        '--node-name',
        name,
        '--min-publish-gap',
        '200ms',
        '--capacity',
        '32',
      ],
      { WARMPOOL_API_TOKEN: FLEET_TOKEN, POD_IP: '10.9.8.7' },
    );
    try {
      await eventually(async () => (await call(proc.url, 'GET', '/readyz', { token: null })).status === 200, {
        timeoutMs: 15_000,
        what: 'ready',
      });
      expect(
        (await call(proc.url, 'PUT', '/v1/pools', { body: { generation: 11, pools: [{ template: 'img', warm: 1 }] } }))
          .status,
      ).toBe(200);
      const inventory = await eventually(
        async () => {
          const found = await inventoryOf(name);
          return found?.status?.appliedGeneration === 11 ? found : undefined;
        },
        { timeoutMs: 10_000, what: 'generation 11 published' },
      );
      expect(inventory.spec).toEqual({ nodeName: name, address: `10.9.8.7:${new URL(proc.url).port}` });
      expect(inventory.status?.capacity).toBe(32);
      proc.child.kill('SIGTERM');
      expect(await proc.exited).toEqual({ code: 0, signal: null });
      expect(await inventoryOf(name)).toBeDefined();
    } finally {
      await proc.stop();
      await sandboxd.close();
    }
  });
});
