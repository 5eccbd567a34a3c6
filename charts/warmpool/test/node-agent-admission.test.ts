// The chart's admission policy on a real apiserver: a node agent's token,
// bound to its pod on node A (as the DaemonSet's projected token is), writes
// NodeInventory A and nothing else; a token of the agent's ServiceAccount that
// names no node writes nothing; and no NodeInventory can be named after one
// node while claiming another. The apiserver enforces owner-reference
// permissions (OwnerReferencesPermissionEnforcement, on in OpenShift and
// other distributions): setting the Node as its NodeInventory's owner takes
// `delete` on that object, which the admission policy pins to the agent's own.
import { apiVersionOf, NodeInventoryType, type NodeInventory } from '@warmpool/api';
import { nodeObject, startCluster, type TestCluster } from '@warmpool/harness';
import { isKubeApiError, ResourceClient } from '@warmpool/kube';
import { KubeInventoryWriter } from '@warmpool/node-agent';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { helmInstall, NAMESPACE } from './support.js';

const AGENT_SA = 'warmpool-node-agent';

let cluster: TestCluster;

async function kubectl(args: string[], input?: object): Promise<string> {
  const r = await cluster.kubectl(args, input === undefined ? {} : { input: JSON.stringify(input) });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** A pod of the agent's ServiceAccount scheduled on `node` (nothing runs it: there is no kubelet). */
async function agentPod(name: string, node: string): Promise<void> {
  await kubectl(['create', '-n', NAMESPACE, '-f', '-'], {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      serviceAccountName: AGENT_SA,
      nodeName: node,
      containers: [{ name: 'node-agent', image: 'node-agent:test' }],
    },
  });
}

async function podBoundToken(pod: string): Promise<string> {
  return (
    await kubectl([
      'create',
      'token',
      AGENT_SA,
      '-n',
      NAMESPACE,
      '--bound-object-kind',
      'Pod',
      '--bound-object-name',
      pod,
    ])
  ).trim();
}

function writerFor(token: string): KubeInventoryWriter {
  return new KubeInventoryWriter(cluster.kubeConfigForToken(token), { timeoutMs: 10_000 });
}

function spec(node: string, address: string): { name: string; spec: NodeInventory['spec'] } {
  return { name: node, spec: { nodeName: node, address } };
}

async function refusal(write: Promise<unknown>): Promise<{ statusCode: number; message: string }> {
  try {
    await write;
  } catch (err) {
    if (isKubeApiError(err)) return { statusCode: err.statusCode, message: err.message };
    throw err;
  }
  throw new Error('the write was accepted');
}

async function addressOf(node: string): Promise<string> {
  return (await kubectl(['get', 'nodeinventory', node, '-o', 'jsonpath={.spec.address}'])).trim();
}

beforeAll(async () => {
  cluster = await startCluster({
    name: 'chart-admission',
    crds: false,
    admissionPlugins: ['OwnerReferencesPermissionEnforcement'],
  });
  await helmInstall(cluster, ['fakeSandboxd.enabled=true']);
  await cluster.waitForCrds(['crd/nodeinventories.warmpool.dev']);
  await kubectl(['create', '-f', '-'], {
    apiVersion: 'v1',
    kind: 'List',
    items: [nodeObject('node-a', '127.0.1.1'), nodeObject('node-b', '127.0.1.2')],
  });
  await agentPod('agent-a', 'node-a');
  await agentPod('agent-b', 'node-b');
  // Node B's own agent publishes first, so there is something to forge.
  await writerFor(await podBoundToken('agent-b')).applyObject(spec('node-b', '127.0.1.2:7443'));
}, 600_000);
afterAll(() => cluster?.stop());

describe('the node agent admission policy', () => {
  it('lets an agent write the NodeInventory of the node its pod runs on, spec and status', async () => {
    const writer = writerFor(await podBoundToken('agent-a'));
    await writer.applyObject(spec('node-a', '127.0.1.1:7443'));
    await expect(writer.applyStatus('node-a', { claimed: 0, publishedAt: new Date().toISOString() })).resolves.toEqual({
      spec: { nodeName: 'node-a', address: '127.0.1.1:7443' },
    });
    expect(await addressOf('node-a')).toBe('127.0.1.1:7443');
  });

  it('lets an agent make its Node the owner of its NodeInventory, as the publisher does once the Node exists', async () => {
    const writer = writerFor(await podBoundToken('agent-a'));
    const owner = await writer.nodeOwner('node-a');
    expect(owner).toMatchObject({ kind: 'Node', name: 'node-a' });
    await writer.applyObject({ ...spec('node-a', '127.0.1.1:7443'), ...(owner ? { owner } : {}) });
    const owners = await kubectl([
      'get',
      'nodeinventory',
      'node-a',
      '-o',
      'jsonpath={.metadata.ownerReferences[*].name}',
    ]);
    expect(owners.trim()).toBe('node-a');
  });

  it("refuses an agent on node A every write to node B's NodeInventory, and B stays as its agent wrote it", async () => {
    const writer = writerFor(await podBoundToken('agent-a'));
    const onSpec = await refusal(writer.applyObject(spec('node-b', '127.0.9.9:7443')));
    expect(onSpec.statusCode).toBe(403);
    expect(onSpec.message).toContain('the node agent on node node-a may write only NodeInventory node-a, not node-b');
    const onStatus = await refusal(
      writer.applyStatus('node-b', { capacity: 100_000, publishedAt: new Date().toISOString() }),
    );
    expect(onStatus.statusCode).toBe(403);
    const inventories = new ResourceClient<NodeInventory>(
      cluster.kubeConfigForToken(await podBoundToken('agent-a')),
      NodeInventoryType,
    );
    const deleted = await refusal(inventories.delete({ name: 'node-b' }));
    expect(deleted.statusCode).toBe(403);
    expect(await addressOf('node-b')).toBe('127.0.1.2:7443');
  });

  it("refuses creating a NodeInventory for a node that is not the agent's", async () => {
    const writer = writerFor(await podBoundToken('agent-a'));
    const created = await refusal(writer.applyObject(spec('fake-node', '127.0.9.9:7443')));
    expect(created.statusCode).toBe(403);
    expect((await cluster.kubectl(['get', 'nodeinventory', 'fake-node'])).code).not.toBe(0);
  });

  it("refuses a token of the agent's ServiceAccount that names no node, even on an existing inventory", async () => {
    const unbound = (await kubectl(['create', 'token', AGENT_SA, '-n', NAMESPACE])).trim();
    const refused = await refusal(writerFor(unbound).applyObject(spec('node-a', '127.0.9.9:7443')));
    expect(refused.statusCode).toBe(403);
    expect(refused.message).toContain('carries no node name');
    expect(await addressOf('node-a')).toBe('127.0.1.1:7443');
  });

  it('refuses, for anyone, a NodeInventory whose name is not its spec.nodeName', async () => {
    const r = await cluster.kubectl(['create', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: apiVersionOf(NodeInventoryType),
        kind: NodeInventoryType.kind,
        metadata: { name: 'node-b' },
        spec: { nodeName: 'node-a', address: '127.0.1.1:7443' },
      }),
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('metadata.name must equal spec.nodeName');
    const renamed = await cluster.kubectl([
      'patch',
      'nodeinventory',
      'node-b',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { nodeName: 'node-a' } }),
    ]);
    expect(renamed.code).not.toBe(0);
    expect(renamed.stderr).toContain('metadata.name must equal spec.nodeName');
  });
});
