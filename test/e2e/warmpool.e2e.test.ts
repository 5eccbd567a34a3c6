// warmpool end to end. The same spec runs against any cluster where warmpool
// is installed (WARMPOOL_E2E_KUBECONFIG, e.g. kind + helm with
// fakeSandboxd.enabled) and, without it, against a local stack it starts
// itself: real kube-apiserver + etcd, control plane, three node agents over
// fake-sandboxd. It only uses what a user has: kubectl, the fleet token and
// a way to the agents: a port-forward on a cluster, the advertised loopback
// address on the local stack (never a pod IP from the host).
import { randomBytes } from 'node:crypto';
import { eventually, sandboxClaim } from '@warmpool/harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claim, getSandbox, info, release } from './helpers/agent.js';
import {
  countSandboxObjects,
  getPool,
  listInventories,
  listNodeNames,
  poolManifest,
  poolRow,
  totalTarget,
} from './helpers/objects.js';
import { kubectlOk, openTarget, type E2eTarget } from './helpers/target.js';

const CONVERGE_MS = 60_000;
// SandboxClaims need the claim pipeline (the chart's controlPlane.redis.url): always on the local stack; on a cluster,
// say so.
const CLAIMS = process.env['WARMPOOL_E2E_KUBECONFIG'] === undefined || process.env['WARMPOOL_E2E_CLAIMS'] === '1';

describe(`warmpool end to end (${process.env['WARMPOOL_E2E_KUBECONFIG'] ? 'WARMPOOL_E2E_KUBECONFIG' : 'local stack'})`, () => {
  let target: E2eTarget;
  const pool = 'e2e-pool';
  // A template no other pool uses, so the node-local pool key is ours alone.
  const image = `registry.example/warmpool-e2e/${randomBytes(4).toString('hex')}:1`;

  beforeAll(async () => {
    target = await openTarget();
  });
  afterAll(async () => {
    await target?.close();
  });

  async function expectReady(replicas: number): Promise<void> {
    await eventually(
      async () => {
        const status = (await getPool(target, pool)).status;
        expect({ ready: status?.readyReplicas, replicas: status?.replicas }).toEqual({ ready: replicas, replicas });
        return true;
      },
      { timeoutMs: CONVERGE_MS, intervalMs: 250, what: `READY = ${replicas}` },
    );
  }

  async function expectTargetsOnNodes(replicas: number): Promise<void> {
    await eventually(
      async () => {
        expect(totalTarget(await listInventories(target), image)).toBe(replicas);
        return true;
      },
      { timeoutMs: CONVERGE_MS, intervalMs: 250, what: `${replicas} targeted on the nodes` },
    );
  }

  it(
    'fills an applied pool: READY = DESIRED, and the NodeInventories carry its targets',
    { timeout: 2 * CONVERGE_MS },
    async () => {
      await kubectlOk(target, ['apply', '-f', '-'], { input: poolManifest(target.namespace, pool, image, 6) });
      await expectReady(6);
      await expectTargetsOnNodes(6);
      const inventories = await listInventories(target);
      expect(inventories.length).toBeGreaterThan(0);
      for (const inventory of inventories) {
        expect(inventory.spec.address, `${inventory.metadata.name} advertises an address`).toMatch(/.+:\d+$/);
      }
    },
  );

  it('follows `kubectl scale swp --replicas`', { timeout: 2 * CONVERGE_MS }, async () => {
    await kubectlOk(target, ['scale', 'swp', pool, '-n', target.namespace, '--replicas=12']);
    await expectReady(12);
    await expectTargetsOnNodes(12);
    expect((await getPool(target, pool)).spec.replicas).toBe(12);
  });

  it(
    'hands a warm sandbox over through a node agent with the fleet token, and takes it back',
    { timeout: CONVERGE_MS },
    async () => {
      const inventories = await listInventories(target);
      const holder = inventories.find((inventory) => (poolRow(inventory, image)?.target ?? 0) > 0);
      expect(holder, 'a node holds part of the pool').toBeDefined();
      if (!holder) throw new Error('no node holds the pool');
      const address = await target.agentAddress(holder);

      const claimed = await claim(address, target.token, {
        template: image,
        ttl_seconds: 120,
        claim_ref: `${target.namespace}/${pool}`,
      });
      expect(claimed.status).toBe(200);
      const sandbox = claimed.body;
      if (sandbox === undefined) throw new Error('no claim body');

      const seen = await getSandbox(address, target.token, sandbox.id);
      expect(seen.status).toBe(200);
      expect(seen.body).toMatchObject({
        id: sandbox.id,
        key: { template: image },
        claim_ref: `${target.namespace}/${pool}`,
      });

      expect(await release(address, sandbox.token, sandbox.id)).toBe(204);
      expect((await getSandbox(address, target.token, sandbox.id)).status).toBe(404);
    },
  );

  it.skipIf(!CLAIMS)(
    'serves a SandboxClaim: Ready, its token in an owned Secret only, released when it is deleted (WARMPOOL_E2E_CLAIMS=1 on a cluster)',
    { timeout: 2 * CONVERGE_MS },
    async () => {
      const name = 'e2e-claim';
      const manifest = JSON.stringify(sandboxClaim(target.namespace, name, pool));
      await kubectlOk(target, ['apply', '-f', '-'], { input: manifest });
      await kubectlOk(target, [
        'wait',
        '--for=condition=Ready',
        `sandboxclaim/${name}`,
        '-n',
        target.namespace,
        `--timeout=${CONVERGE_MS / 1000}s`,
      ]);
      const claim = JSON.parse(
        await kubectlOk(target, ['get', 'sandboxclaim', name, '-n', target.namespace, '-o', 'json']),
      ) as {
        metadata: { uid: string };
        status?: { sandbox?: { name?: string } };
      };
      expect(claim.status?.sandbox?.name).toBe(name);
      const secret = JSON.parse(
        await kubectlOk(target, ['get', 'secret', name, '-n', target.namespace, '-o', 'json']),
      ) as { metadata: { ownerReferences?: Array<{ uid: string }> }; data: Record<string, string> };
      expect(secret.metadata.ownerReferences?.map((ref) => ref.uid)).toEqual([claim.metadata.uid]);
      const id = Buffer.from(secret.data['id'] ?? '', 'base64').toString('utf8');
      expect(id).toMatch(/^sb_/);
      const token = Buffer.from(secret.data['token'] ?? '', 'base64').toString('utf8');
      expect(token).not.toBe('');
      expect(JSON.stringify(claim)).not.toContain(token);

      const node = Buffer.from(secret.data['node'] ?? '', 'base64').toString('utf8');
      const holder = (await listInventories(target)).find((inventory) => inventory.metadata.name === node);
      // Through the target's way to that agent (a port-forward on a cluster): never the pod IP from here.
      const address = holder === undefined ? '' : await target.agentAddress(holder);
      expect((await getSandbox(address, target.token, id ?? '')).status).toBe(200);
      await kubectlOk(target, [
        'delete',
        'sandboxclaim',
        name,
        '-n',
        target.namespace,
        `--timeout=${CONVERGE_MS / 1000}s`,
      ]);
      // No finalizer holds the delete: the controller releases the sandbox once it sees the claim gone.
      await eventually(async () => (await getSandbox(address, target.token, id ?? '')).status === 404, {
        what: "the deleted claim's sandbox released on its node",
        timeoutMs: CONVERGE_MS,
      });
    },
  );

  it('drains a deleted pool on every node', { timeout: 2 * CONVERGE_MS }, async () => {
    const addresses = await Promise.all(
      (await listInventories(target)).map((inventory) => target.agentAddress(inventory)),
    );
    await kubectlOk(target, ['delete', 'swp', pool, '-n', target.namespace]);
    await eventually(
      async () => {
        for (const inventory of await listInventories(target)) {
          expect(poolRow(inventory, image)?.target ?? 0, `${inventory.metadata.name} still targets the pool`).toBe(0);
        }
        for (const address of addresses) {
          const row = (await info(address, target.token)).pools.find((p) => p.key.template === image);
          expect(row?.target ?? 0, `${address} still targets the pool`).toBe(0);
          expect(row?.warm ?? 0, `${address} still holds warm sandboxes of the pool`).toBe(0);
        }
        return true;
      },
      { timeoutMs: CONVERGE_MS, intervalMs: 250, what: 'the pool drained on every node' },
    );
  });

  it('keeps etcd free of per-sandbox objects: no Sandbox, and one NodeInventory per node', async () => {
    expect(await countSandboxObjects(target)).toBe(0);
    const nodes = new Set(await listNodeNames(target));
    const inventories = await listInventories(target);
    const names = inventories.map((inventory) => inventory.metadata.name ?? '');
    expect(new Set(names).size).toBe(names.length);
    for (const inventory of inventories) {
      expect(nodes.has(inventory.metadata.name ?? ''), `${inventory.metadata.name} names a Node`).toBe(true);
      expect(inventory.spec.nodeName).toBe(inventory.metadata.name);
    }
    expect(inventories.length).toBeLessThanOrEqual(nodes.size);
  });
});
