// Two things a hostile or unusual cluster does to the driver, on a real
// kube-apiserver with real agents: a NodeInventory re-pointed (or made up) by
// someone holding an agent token, and upstream agent-sandbox's own
// SandboxWarmPool CRD, whose status schema has no conditions, installed
// instead of ours, and switched at runtime.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { apiVersionOf, NodeInventoryType, type NodeInventory } from '@warmpool/api';
import { eventually, nodeObject, sleep, template, warmPool, type TestCluster } from '@warmpool/harness';
import { ResourceClient } from '@warmpool/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlane } from '../../../src/options.js';
import type { Fleet } from '../../support/fleet.js';
import { apply, condition, getPool, kubectl, patch } from '../../support/objects.js';
import { metricSamples, metricSum } from '../../support/metrics.js';
import { chartPoolCrd, upstreamPoolCrd } from '../../support/upstream-crd.js';
import { testWorld, type TestWorld } from '../../support/world.js';

const TOKEN = 'fleet-token-for-trust-tests';
const AGENT_POD_SELECTOR = 'app.kubernetes.io/component=node-agent';

/** Whoever sits at a forged address: records every request that reaches it. */
interface Listener {
  address: string;
  requests: Array<{ method: string; url: string; headers: IncomingHttpHeaders }>;
  close(): Promise<void>;
}

async function listenAt(host: string): Promise<Listener> {
  const requests: Listener['requests'] = [];
  const server: Server = createServer((req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ pools: [], claimed: 0 }));
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as { port: number };
  return { address: `${host}:${port}`, requests, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

let world: TestWorld;
let cluster: TestCluster;
let fleet: Fleet;
let system: string;
let controlPlane: ControlPlane;

/** The messages of the AddressNotOfNode Events on a NodeInventory: the driver's word that it stopped calling it. */
async function addressWarnings(node: string): Promise<string[]> {
  const list = JSON.parse(
    await kubectl(world.cluster, [
      'get',
      'events',
      '-A',
      '--field-selector',
      `reason=AddressNotOfNode,involvedObject.name=${node}`,
      '-o',
      'json',
    ]),
  ) as { items: Array<{ message?: string }> };
  return list.items.map((event) => event.message ?? '');
}
let inventories: ResourceClient<NodeInventory>;

beforeAll(async () => {
  world = await testWorld({
    name: 'cp-trust',
    token: TOKEN,
    fleet: { count: 2, capacity: 20, publishInterval: '1s' },
  });
  ({ cluster, fleet } = world);
  // Upstream's CRD before the control plane starts: what it reads at start.
  await apply(cluster, (await upstreamPoolCrd(cluster)) as unknown as Record<string, unknown>);
  system = await cluster.createNamespace('warmpool-system');
  controlPlane = await world.leader(system, { agentPodSelector: AGENT_POD_SELECTOR });
  inventories = new ResourceClient<NodeInventory>(cluster.kubeConfig, NodeInventoryType);
}, 180_000);

afterAll(() => world?.close());

async function conditionsWritten(): Promise<number | undefined> {
  return (await metricSamples(controlPlane, 'warmpool_controlplane_status_conditions_written'))[0]?.value;
}

function statusWriteErrors(): Promise<number> {
  return metricSum(controlPlane, 'warmpool_controlplane_status_writes_total', { outcome: 'error' });
}

describe("with upstream agent-sandbox's SandboxWarmPool CRD (no status.conditions)", () => {
  it('writes the fields upstream declares, and keeps them current as the pool scales', async () => {
    const ns = await cluster.createNamespace('upstream');
    await apply(cluster, template(ns, 'tpl', 'registry.test/upstream:1'), warmPool(ns, 'pool', 'tpl', 4));
    const pool = await eventually(
      async () => {
        const p = await getPool(cluster, ns, 'pool');
        return p.status?.readyReplicas === 4 ? p : undefined;
      },
      { what: 'readyReplicas 4' },
    );
    expect(pool.status).toEqual({ replicas: 4, readyReplicas: 4, selector: 'warmpool.dev/pool=pool' });

    await patch(cluster, 'sandboxwarmpools', ns, 'pool', { spec: { replicas: 2 } });
    await eventually(async () => (await getPool(cluster, ns, 'pool')).status?.readyReplicas === 2, {
      what: 'readyReplicas 2 after scaling down',
    });
    const row = (await kubectl(cluster, ['get', 'swp', 'pool', '-n', ns, '--no-headers'])).trim().split(/\s+/);
    expect(row.slice(0, 3)).toEqual(['pool', '2', '2']);
    expect(await statusWriteErrors()).toBe(0);
  });

  it('follows the CRD when it changes at runtime: conditions once declared, and back without them', async () => {
    const ns = await cluster.createNamespace('switch');
    await apply(cluster, template(ns, 'tpl', 'registry.test/switch:1'), warmPool(ns, 'pool', 'tpl', 2));
    await eventually(async () => (await getPool(cluster, ns, 'pool')).status?.readyReplicas === 2, {
      what: 'readyReplicas 2',
    });

    await apply(cluster, (await chartPoolCrd(cluster)) as unknown as Record<string, unknown>);
    const withConditions = await eventually(
      async () => {
        const p = await getPool(cluster, ns, 'pool');
        return condition(p, 'Ready')?.status === 'True' ? p : undefined;
      },
      { what: 'the Ready condition once the CRD declares conditions' },
    );
    expect(withConditions.status).toMatchObject({
      replicas: 2,
      readyReplicas: 2,
      observedGeneration: withConditions.metadata.generation,
    });

    await apply(cluster, (await upstreamPoolCrd(cluster)) as unknown as Record<string, unknown>);
    // A write racing the switch fails once (the apiserver already refuses conditions); the next change waits until
    // the control plane says it has seen the switch.
    await eventually(async () => (await conditionsWritten()) === 0, { what: 'the control plane to see the switch' });
    const errorsBefore = await statusWriteErrors();
    await patch(cluster, 'sandboxwarmpools', ns, 'pool', { spec: { replicas: 3 } });
    await eventually(async () => (await getPool(cluster, ns, 'pool')).status?.readyReplicas === 3, {
      what: "readyReplicas 3 under upstream's CRD again",
    });
    expect(await statusWriteErrors()).toBe(errorsBefore);
  });
});

describe('a NodeInventory pointing where its Node does not', () => {
  it('is never called there, not even probed: the forged address receives nothing while the real agent puts its spec back', async () => {
    const ns = await cluster.createNamespace('forged');
    const key = 'registry.test/forged:1|none|small';
    await apply(cluster, template(ns, 'tpl', 'registry.test/forged:1'), warmPool(ns, 'pool', 'tpl', 4));
    await eventually(async () => (await fleet.targetsOf(key)).join(',') === '2,2', { what: 'targets 2,2' });

    const listener = await listenAt('127.0.0.2');
    try {
      const victim = fleet.nodes[1]?.name ?? '';
      // What an agent token could do before the admission policy (charts/warmpool/test/node-agent-admission.test.ts):
      // re-point a real node, and invent one claiming room for 100 000 with everything warm.
      await kubectl(cluster, [
        'patch',
        'nodeinventory',
        victim,
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { address: listener.address } }),
      ]);
      await inventories.create({
        apiVersion: apiVersionOf(NodeInventoryType),
        kind: NodeInventoryType.kind,
        metadata: { name: 'fake-node' },
        spec: { nodeName: 'fake-node', address: listener.address },
      });
      await inventories.applyStatus(
        {
          metadata: { name: 'fake-node' },
          status: {
            capacity: 100_000,
            claimed: 0,
            publishedAt: new Date().toISOString(),
            pools: [
              { template: 'registry.test/forged:1', net: 'none', size: 'small', target: 4, warm: 4, refilling: 0 },
            ],
          },
        },
        { fieldManager: 'attacker', force: true },
      );
      await patch(cluster, 'sandboxwarmpools', ns, 'pool', { spec: { replicas: 6 } });

      await eventually(async () => (await addressWarnings('fake-node')).length > 0, {
        what: 'fake-node out of placement, with a Warning Event',
      });
      // The victim's agent re-asserts its spec within a publish interval (1 s here).
      await eventually(
        async () =>
          (await inventories.get({ name: victim })).spec?.address === `127.0.0.1:${fleet.nodes[1]?.agentPort}`,
        { what: "the victim's spec restored by its agent" },
      );
      // Many probe rounds (every 500 ms) and the scale-up push have passed.
      await eventually(async () => (await fleet.targetsOf(key)).join(',') === '3,3', {
        what: 'targets 3,3 on the real nodes',
      });
      await sleep(2_000);
      expect(listener.requests).toEqual([]);

      expect(await addressWarnings('fake-node')).toContainEqual(
        expect.stringContaining('there is no Node named fake-node to vouch for 127.0.0.2'),
      );
      const pool = await eventually(
        async () => {
          const p = await getPool(cluster, ns, 'pool');
          return p.status?.readyReplicas === 6 ? p : undefined;
        },
        { what: 'readyReplicas 6, from the real nodes only' },
      );
      expect(pool.status?.replicas).toBe(6);
      const events = JSON.parse(await kubectl(cluster, ['get', 'events', '-A', '-o', 'json'])) as {
        items: Array<{ reason: string; involvedObject: { name: string } }>;
      };
      expect(events.items.filter((e) => e.reason === 'AddressNotOfNode').map((e) => e.involvedObject.name)).toContain(
        'fake-node',
      );
      expect(await controlPlane.registry.metrics()).toMatch(
        /^warmpool_controlplane_nodes\{state="unverified_address"\} 1$/m,
      );
    } finally {
      await listener.close();
      await inventories.delete({ name: 'fake-node' }).catch(() => undefined);
    }
  });
});

describe("an agent advertising its pod IP (the chart's DaemonSet)", () => {
  it('is called there while a node-agent pod on its node has that IP, and leaves placement once that pod goes', async () => {
    const agent = await listenAt('127.0.0.3');
    const name = 'pod-network-node';
    try {
      // The Node's own addresses do not include the pod IP, as on a cluster with a pod network.
      await kubectl(cluster, ['create', '-f', '-'], JSON.stringify(nodeObject(name, '10.9.9.9')));
      await kubectl(cluster, ['create', 'serviceaccount', 'default', '-n', system]).catch(() => undefined);
      await kubectl(
        cluster,
        ['create', '-n', system, '-f', '-'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'agent-on-pod-network', labels: { 'app.kubernetes.io/component': 'node-agent' } },
          spec: { nodeName: name, containers: [{ name: 'node-agent', image: 'node-agent:test' }] },
        }),
      );
      // No kubelet here: report the pod running with the listener's IP ourselves.
      await kubectl(cluster, [
        'patch',
        'pod',
        'agent-on-pod-network',
        '-n',
        system,
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status: { phase: 'Running', podIP: '127.0.0.3', podIPs: [{ ip: '127.0.0.3' }] } }),
      ]);
      await inventories.create({
        apiVersion: apiVersionOf(NodeInventoryType),
        kind: NodeInventoryType.kind,
        metadata: { name },
        spec: { nodeName: name, address: agent.address },
      });
      await inventories.applyStatus(
        { metadata: { name }, status: { capacity: 10, claimed: 0, publishedAt: new Date().toISOString(), pools: [] } },
        { fieldManager: 'test', force: true },
      );

      const call = await eventually(() => agent.requests.find((r) => r.url === '/v1/info' || r.url === '/v1/pools'), {
        what: 'a call at the pod IP',
      });
      expect(call.headers.authorization).toBe(`Bearer ${TOKEN}`);
      // Called there: the pod's IP vouched for it.

      await kubectl(cluster, ['delete', 'pod', 'agent-on-pod-network', '-n', system, '--wait=false']);
      const problem = `127.0.0.3 is not one of Node ${name}'s addresses (10.9.9.9, ${name}) nor the IP of a node-agent pod on it`;
      await eventually(async () => (await addressWarnings(name)).some((message) => message.includes(problem)), {
        what: 'the node out of placement once its agent pod is going, with a Warning Event saying why',
      });
      await sleep(500);
      const calls = agent.requests.length;
      await sleep(2_000);
      expect(agent.requests).toHaveLength(calls);
    } finally {
      await agent.close();
      await inventories.delete({ name }).catch(() => undefined);
    }
  });
});
