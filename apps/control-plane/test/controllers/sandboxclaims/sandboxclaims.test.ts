// SandboxClaims end to end: a real kube-apiserver, a real Redis, three real
// node agents (processes) each in front of a fake-sandboxd (process), and the
// control plane in this process with the claim pipeline, the SandboxClaim
// controller and the claim janitor. What the nodes hold is read straight from
// the agents.
import { randomUUID } from 'node:crypto';
import {
  claimBodySchema,
  claimGrantSchema,
  claimNameOf,
  formatNodeClaimRef,
  parseNodeClaimRef,
  SANDBOX_CLAIM_FINALIZER,
  SANDBOX_ID_ANNOTATION,
  SandboxClaimType,
  sandboxListSchema,
  type SandboxClaim,
  type SandboxRow,
} from '@warmpool/api';
import { eventually, sandboxClaim, sandboxEnv, sleep, template, type TestCluster, warmPool } from '@warmpool/harness';
import { ignoreNotFound, ResourceClient } from '@warmpool/kube';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { KubeSecret } from '../../../src/controllers/sandboxclaims/secret.js';
import type { ControlPlane } from '../../../src/options.js';
import { ClaimIndex } from '../../../src/provisioning/claim-index.js';
import { ownerMark } from '../../../src/provisioning/claim-service.js';
import { callClaims, serviceAccountToken } from '../../support/claims.js';
import type { Fleet, FleetNode } from '../../support/fleet.js';
import { apply, kubectl, patch } from '../../support/objects.js';
import { testWorld, type TestWorld } from '../../support/world.js';
import { claimsReady, janitorSweeps } from '../../support/metrics.js';

const TOKEN = 'fleet-token-for-sandboxclaim-tests';
const WARMPOOL_CLAIM = { 'warmpool.dev/driver': 'sandboxd' };

function ready(claim: SandboxClaim | undefined): { status: string; reason?: string; message?: string } | undefined {
  return claim?.status?.conditions?.find((c) => c.type === 'Ready');
}

function decode(secret: KubeSecret): Record<string, string> {
  return Object.fromEntries(
    Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
  );
}

describe('SandboxClaims (real apiserver, real agents, fake-sandboxd)', () => {
  let world: TestWorld;
  let cluster: TestCluster;
  let fleet: Fleet;
  let system: string;
  let controlPlane: ControlPlane | undefined;
  let claimClient: ResourceClient<SandboxClaim>;
  let secretClient: ResourceClient<KubeSecret>;

  /** A leading control plane. Its janitor sweeps only in the specs that ask for it (`janitorIntervalMs`). */
  async function start(
    controller: { leaseSeconds?: number } = {},
    janitorIntervalMs = 3_600_000,
  ): Promise<ControlPlane> {
    controlPlane = await world.controlPlane(system, {
      claims: world.claimsOptions(),
      sandboxClaims: {
        controller: { retryInitialMs: 100, retryMaxMs: 1_000, unservableRecheckMs: 2_000, ...controller },
        janitor: { intervalMs: janitorIntervalMs, graceMs: 500 },
      },
    });
    const started = controlPlane;
    await eventually(async () => started.isLeader() && started.ready() && (await claimsReady(started)), {
      what: 'the control plane to lead, ready to claim',
    });
    return started;
  }

  const getClaim = (ns: string, name: string): Promise<SandboxClaim | undefined> =>
    ignoreNotFound(claimClient.get({ namespace: ns, name }));
  const getSecret = (ns: string, name: string): Promise<KubeSecret | undefined> =>
    ignoreNotFound(secretClient.get({ namespace: ns, name }));

  async function readyClaim(ns: string, name: string, timeoutMs = 30_000): Promise<SandboxClaim> {
    return eventually(
      async () => {
        const claim = await getClaim(ns, name);
        return ready(claim)?.status === 'True' ? claim : undefined;
      },
      { what: `SandboxClaim ${ns}/${name} to be Ready`, timeoutMs },
    );
  }

  async function failedWith(ns: string, name: string, reason: string): Promise<SandboxClaim> {
    return eventually(
      async () => {
        const claim = await getClaim(ns, name);
        if (ready(claim)?.status === 'False' && ready(claim)?.reason === reason) return claim;
        throw new Error(`the claim is ${JSON.stringify({ metadata: claim?.metadata, status: claim?.status })}`);
      },
      { what: `SandboxClaim ${ns}/${name} to be Ready=False ${reason}` },
    );
  }

  /** Every claim the node holds, as its agent lists them. */
  async function nodeClaims(node: FleetNode): Promise<SandboxRow[]> {
    const res = await fetch(`${node.agentUrl}/v1/sandboxes`, { headers: { authorization: `Bearer ${TOKEN}` } });
    return sandboxListSchema.parse(await res.json()).sandboxes;
  }

  async function metric(name: string, labels = ''): Promise<number> {
    const text = (await controlPlane?.registry.getSingleMetricAsString(name)) ?? '';
    const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
    return line === undefined ? 0 : Number(line.split(' ').at(-1));
  }

  /** The rows whose claim_ref names the claim `<namespace>/<name>`, through any front door. */
  async function heldAnywhere(claim: string): Promise<SandboxRow[]> {
    return (await Promise.all(fleet.nodes.map(nodeClaims))).flat().filter((row) => {
      const owner = parseNodeClaimRef(row.claim_ref);
      if (owner === undefined) return false;
      const { namespace, name } = claimNameOf(owner);
      return `${namespace}/${name}` === claim;
    });
  }

  async function drivenPool(ns: string, name: string, replicas = 6): Promise<void> {
    await apply(
      cluster,
      template(ns, `${name}-tpl`, `registry.test/${ns}-${name}:1`),
      warmPool(ns, name, `${name}-tpl`, replicas),
    );
  }

  beforeAll(async () => {
    world = await testWorld({ name: 'cp-sandboxclaims', token: TOKEN, redis: true, fleet: { count: 3 } });
    ({ cluster, fleet } = world);
    system = await cluster.createNamespace('warmpool-system');
    claimClient = new ResourceClient<SandboxClaim>(cluster.kubeConfig, SandboxClaimType);
    secretClient = new ResourceClient<KubeSecret>(cluster.kubeConfig, {
      group: '',
      version: 'v1',
      plural: 'secrets',
      kind: 'Secret',
      namespaced: true,
    });
    await start();
  }, 120_000);

  afterEach(() => world?.emptyNamespaces('sandboxclaims,sandboxwarmpools'));

  afterAll(() => world?.close());

  it('makes a SandboxClaim Ready with its own sandbox and an owned Secret, and never shows the token', async () => {
    const ns = await world.namespace('ready');
    await drivenPool(ns, 'pool');
    await apply(cluster, sandboxClaim(ns, 'one', 'pool'));
    const claim = await readyClaim(ns, 'one');

    expect(ready(claim)).toMatchObject({ status: 'True', reason: 'Claimed' });
    expect(claim.status?.sandbox).toEqual({ name: 'one', podIPs: ['127.0.0.1'] });
    // Two writes to Ready (the Secret, then the status): no finalizer, no annotation on the claim.
    expect(claim.metadata.finalizers ?? []).toEqual([]);
    expect(claim.metadata.annotations?.[SANDBOX_ID_ANNOTATION]).toBeUndefined();

    const secret = await getSecret(ns, 'one');
    const id = decode(secret as KubeSecret)['id'];
    expect(id).toMatch(/^sb_/);
    expect(ready(claim)?.message).toContain(`sandbox ${id} `);
    expect(secret?.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'SandboxClaim', name: 'one', uid: claim.metadata.uid, controller: true }),
    ]);
    const data = decode(secret as KubeSecret);
    expect(Object.keys(data).sort()).toEqual(['deadline', 'id', 'node', 'ownerAddr', 'token']);
    expect(data['id']).toBe(id);
    expect(data['token']).not.toBe('');
    expect(JSON.stringify(claim)).not.toContain(data['token']);

    const held = await heldAnywhere(`${ns}/one`);
    expect(held.map((row) => row.id)).toEqual([id]);
    expect(
      (await kubectl(cluster, ['get', 'sandboxes.agents.x-k8s.io', '-A', '-o', 'name'])).trim(),
      'no Sandbox object is created',
    ).toBe('');
    const columns = (await kubectl(cluster, ['get', 'sandboxclaim', 'one', '-n', ns, '--no-headers']))
      .trim()
      .split(/\s+/);
    expect(columns.slice(0, 4)).toEqual(['one', 'True', 'one', 'Claimed']);
  });

  it('releases the sandbox when the SandboxClaim is deleted, and deletes its Secret', async () => {
    const ns = await world.namespace('delete');
    await drivenPool(ns, 'pool');
    await apply(cluster, sandboxClaim(ns, 'gone', 'pool'));
    const claim = await readyClaim(ns, 'gone');
    const nodeName = decode((await getSecret(ns, 'gone')) as KubeSecret)['node'];
    const node = fleet.nodes.find((n) => n.name === nodeName) as FleetNode;
    const before = (await node.info()).claimed;

    // No finalizer: the claim goes at once, and the controller releases its sandbox as it sees the deletion.
    await kubectl(cluster, ['delete', 'sandboxclaim', 'gone', '-n', ns]);
    expect(await getClaim(ns, 'gone')).toBeUndefined();
    await eventually(async () => (await heldAnywhere(`${ns}/gone`)).length === 0, { what: 'the sandbox released' });
    expect((await node.info()).claimed).toBeLessThan(before);
    // No garbage collector runs here: the controller deletes the Secret itself.
    await eventually(async () => (await getSecret(ns, 'gone')) === undefined, { what: 'the Secret deleted' });
    expect(claim.metadata.uid).toBeDefined();
  });

  it('gives 20 concurrent SandboxClaims 20 distinct sandboxes', async () => {
    const ns = await world.namespace('twenty');
    await drivenPool(ns, 'pool', 30);
    const names = Array.from({ length: 20 }, (_, i) => `c${i}`);
    await apply(cluster, ...names.map((name) => sandboxClaim(ns, name, 'pool')));
    const ready20 = await Promise.all(names.map((name) => readyClaim(ns, name, 60_000)));
    expect(ready20.map((c) => c.metadata.uid)).toHaveLength(20);
    const secrets = await Promise.all(names.map(async (name) => decode((await getSecret(ns, name)) as KubeSecret)));
    expect(new Set(secrets.map((data) => data['id'])).size).toBe(20);
    expect(new Set(secrets.map((data) => data['token'])).size).toBe(20);
    const held = await Promise.all(names.map((name) => heldAnywhere(`${ns}/${name}`)));
    expect(held.map((rows) => rows.length)).toEqual(names.map(() => 1));
    expect(held.map((rows) => parseNodeClaimRef(rows[0]?.claim_ref)?.door)).toEqual(names.map(() => 'crd'));
  });

  it('answers PoolNotFound to a claim addressed to warmpool, leaves an unaddressed one alone, and serves both once the pool exists', async () => {
    const ns = await world.namespace('missing');
    await apply(
      cluster,
      sandboxClaim(ns, 'asked', 'later', { annotations: WARMPOOL_CLAIM }),
      sandboxClaim(ns, 'plain', 'later'),
    );
    const failed = await failedWith(ns, 'asked', 'PoolNotFound');
    expect(ready(failed)?.message).toContain('later');
    await sleep(500);
    const plain = await getClaim(ns, 'plain');
    expect(plain?.status).toBeUndefined();
    expect(plain?.metadata.finalizers ?? []).toEqual([]);

    await drivenPool(ns, 'later');
    await readyClaim(ns, 'asked');
    await readyClaim(ns, 'plain');
  });

  it("answers NotDriven to a claim of an undriven pool addressed to warmpool, never writes upstream's claims, and serves once the template opts in", async () => {
    const ns = await world.namespace('undriven');
    await apply(
      cluster,
      template(ns, 'tpl', `registry.test/${ns}:1`, { optIn: false }),
      warmPool(ns, 'pool', 'tpl', 3),
    );
    await apply(
      cluster,
      sandboxClaim(ns, 'asked', 'pool', { annotations: WARMPOOL_CLAIM }),
      sandboxClaim(ns, 'upstreams', 'pool'),
    );
    await failedWith(ns, 'asked', 'NotDriven');
    await sleep(500);
    const upstreams = await getClaim(ns, 'upstreams');
    expect(upstreams?.status).toBeUndefined();
    expect(upstreams?.metadata.finalizers ?? []).toEqual([]);
    expect(upstreams?.metadata.annotations?.[SANDBOX_ID_ANNOTATION]).toBeUndefined();

    await patch(cluster, 'sandboxtemplate', ns, 'tpl', { metadata: { annotations: WARMPOOL_CLAIM } });
    await readyClaim(ns, 'asked');
    await readyClaim(ns, 'upstreams');
  });

  it('answers NoCapacity while no node has room, and Ready once room appears', async () => {
    const ns = await world.namespace('full');
    await drivenPool(ns, 'pool', 3);
    const drain = (method: 'POST' | 'DELETE'): Promise<void[]> =>
      Promise.all(
        fleet.nodes.map(async (node) => {
          const res = await fetch(`${node.sandboxdUrl}/v1/drain`, {
            method,
            headers: { authorization: `Bearer ${TOKEN}` },
          });
          await res.body?.cancel();
          expect(res.ok).toBe(true);
        }),
      );
    await drain('POST');
    try {
      await apply(cluster, sandboxClaim(ns, 'waiting', 'pool'));
      await failedWith(ns, 'waiting', 'NoCapacity');
      expect(await heldAnywhere(`${ns}/waiting`)).toEqual([]);
    } finally {
      await drain('DELETE');
    }
    await readyClaim(ns, 'waiting');
  });

  it('turns a claim Expired at its shutdownTime (the node reaps the sandbox), and deletes it with shutdownPolicy Delete', async () => {
    const ns = await world.namespace('expiry');
    await drivenPool(ns, 'pool');
    const soon = new Date(Date.now() + 4_000).toISOString();
    await apply(
      cluster,
      sandboxClaim(ns, 'kept', 'pool', { lifecycle: { shutdownTime: soon, shutdownPolicy: 'Retain' } }),
      sandboxClaim(ns, 'dropped', 'pool', { lifecycle: { shutdownTime: soon, shutdownPolicy: 'Delete' } }),
    );
    await readyClaim(ns, 'kept');
    await readyClaim(ns, 'dropped');
    const secret = decode((await getSecret(ns, 'kept')) as KubeSecret);
    expect(Math.abs(Date.parse(secret['deadline'] ?? '') - Date.parse(soon))).toBeLessThanOrEqual(1_500);

    const expired = await failedWith(ns, 'kept', 'Expired');
    expect(expired.status?.sandbox).toBeUndefined();
    expect(await heldAnywhere(`${ns}/kept`)).toEqual([]);
    expect(await getSecret(ns, 'kept')).toBeUndefined();
    await eventually(async () => (await getClaim(ns, 'dropped')) === undefined, {
      what: 'the Delete-policy claim to be deleted',
    });
    expect(await heldAnywhere(`${ns}/dropped`)).toEqual([]);
  });

  it('releases the sandbox of a claim deleted while its batch ran', async () => {
    const ns = await world.namespace('inflight');
    await drivenPool(ns, 'pool');
    const vanished = await metric('warmpool_controlplane_sandboxclaim_releases_total', '{cause="vanished"}');
    // The agents are paused: the claim's job waits on a node while the claim is deleted.
    for (const node of fleet.nodes) node.agent?.kill('SIGSTOP');
    try {
      await apply(cluster, sandboxClaim(ns, 'racing', 'pool'));
      await sleep(300);
      await kubectl(cluster, ['delete', 'sandboxclaim', 'racing', '-n', ns]);
    } finally {
      for (const node of fleet.nodes) node.agent?.kill('SIGCONT');
    }
    await eventually(
      async () =>
        (await metric('warmpool_controlplane_sandboxclaim_releases_total', '{cause="vanished"}')) === vanished + 1,
      { what: 'the landed claim to be released' },
    );
    expect(await heldAnywhere(`${ns}/racing`)).toEqual([]);
    expect(await getSecret(ns, 'racing')).toBeUndefined();
  });

  it('leaves no Secret and no claimed sandbox of 20 claims deleted as their batch lands, round after round', async () => {
    const ns = await world.namespace('midbatch');
    await drivenPool(ns, 'pool', 30);
    const rounds = [0, 2, 5, 10, 20];
    for (const [round, deleteAfterMs] of rounds.entries()) {
      const names = Array.from({ length: 20 }, (_, i) => `r${round}-c${i}`);
      // The agents are paused while the claims' batch reaches them; they resume and the claims are deleted a little
      // later each round, so deletions land before, while and after the answers.
      for (const node of fleet.nodes) node.agent?.kill('SIGSTOP');
      try {
        await Promise.all(names.map((name) => claimClient.create(sandboxClaim(ns, name, 'pool'))));
        await sleep(300);
      } finally {
        for (const node of fleet.nodes) node.agent?.kill('SIGCONT');
      }
      await sleep(deleteAfterMs);
      await Promise.all(names.map((name) => ignoreNotFound(claimClient.delete({ namespace: ns, name }))));
    }
    await eventually(async () => (await claimClient.list({ namespace: ns })).items.length === 0, {
      what: 'every claim to be deleted',
    });
    const heldInNamespace = async (): Promise<SandboxRow[]> =>
      (await Promise.all(fleet.nodes.map(nodeClaims)))
        .flat()
        .filter((row) => parseNodeClaimRef(row.claim_ref)?.namespace === ns);
    await eventually(
      async () => {
        const held = await heldInNamespace();
        if (held.length > 0) throw new Error(`still held: ${JSON.stringify(held)}`);
        return true;
      },
      { what: "the nodes to hold none of the deleted claims' sandboxes" },
    );
    const secretsLeft = async (): Promise<string[]> =>
      (await secretClient.list({ namespace: ns })).items
        .filter((secret) => secret.type === 'warmpool.dev/sandbox')
        .map((secret) => secret.metadata.name ?? '');
    // No garbage collector runs here: whatever the controller does not delete itself stays.
    await eventually(
      async () => {
        const left = await secretsLeft();
        if (left.length > 0) throw new Error(`Secrets of deleted claims left: ${left.join(', ')}`);
        return true;
      },
      {
        what: 'no Secret of a deleted claim to be left',
        timeoutMs: 15_000,
      },
    );
    await sleep(1_000);
    expect(await secretsLeft(), 'no Secret written late').toEqual([]);
    expect(await heldInNamespace(), 'no sandbox claimed late').toEqual([]);
  });

  it('releases the sandbox of a claim deleted while the control plane was down, and deletes its Secret (the janitor, once it is back)', async () => {
    const ns = await world.namespace('down');
    await drivenPool(ns, 'pool');
    await apply(cluster, sandboxClaim(ns, 'orphaned', 'pool'));
    await readyClaim(ns, 'orphaned');
    await controlPlane?.close();
    controlPlane = undefined;

    // No finalizer holds the claim: it goes at once, with nobody there to release its sandbox or delete its Secret.
    await kubectl(cluster, ['delete', 'sandboxclaim', 'orphaned', '-n', ns]);
    expect(await getClaim(ns, 'orphaned')).toBeUndefined();
    expect(await heldAnywhere(`${ns}/orphaned`)).toHaveLength(1);
    expect(await getSecret(ns, 'orphaned'), 'no garbage collector runs here').toBeDefined();

    // The janitor (every --claim-janitor-interval, a second here) finds the uid gone.
    const back = await start({}, 1_000);
    await eventually(async () => (await heldAnywhere(`${ns}/orphaned`)).length === 0, {
      what: 'the orphaned sandbox released by the janitor',
      timeoutMs: 20_000,
    });
    await eventually(async () => (await getSecret(ns, 'orphaned')) === undefined, { what: 'its Secret deleted' });
    expect(await metric('warmpool_controlplane_claim_janitor_releases_total')).toBeGreaterThanOrEqual(1);
    // Back to a janitor that does not sweep by itself, for the specs after this one.
    await back.close();
    await start();
  });

  it('lifts the finalizer of a claim an earlier version served once its sandbox is released, and deletes its Secret', async () => {
    const ns = await world.namespace('legacy');
    await drivenPool(ns, 'pool');
    await apply(cluster, sandboxClaim(ns, 'old', 'pool'));
    await readyClaim(ns, 'old');
    const id = decode((await getSecret(ns, 'old')) as KubeSecret)['id'] ?? '';
    // What an earlier version wrote beside the status: its finalizer and the sandbox-id annotation.
    await patch(cluster, 'sandboxclaim', ns, 'old', {
      metadata: { finalizers: [SANDBOX_CLAIM_FINALIZER], annotations: { [SANDBOX_ID_ANNOTATION]: id } },
    });
    await sleep(300);
    expect(await heldAnywhere(`${ns}/old`)).toHaveLength(1);

    await kubectl(cluster, ['delete', 'sandboxclaim', 'old', '-n', ns, '--wait=false']);
    await eventually(async () => (await getClaim(ns, 'old')) === undefined, { what: 'the finalizer to be lifted' });
    expect(await heldAnywhere(`${ns}/old`)).toEqual([]);
    expect(await getSecret(ns, 'old')).toBeUndefined();
  });

  it('has the janitor release node claims of SandboxClaims that no longer exist, and nothing else', async () => {
    const ns = await world.namespace('janitor');
    await drivenPool(ns, 'pool');
    await apply(cluster, sandboxClaim(ns, 'alive', 'pool'));
    await readyClaim(ns, 'alive');
    const node = fleet.nodes[0] as FleetNode;
    // An orphan made straight on a node, as a crash between the node claim and the claim's answer would leave it.
    const res = await fetch(`${node.agentUrl}/v1/claim`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        template: `registry.test/${ns}-pool:1`,
        claim_ref: formatNodeClaimRef({ door: 'crd', namespace: ns, name: 'ghost', uid: randomUUID() }),
        ttl_seconds: 600,
      }),
    });
    expect(res.status).toBe(200);
    // One served for the CRD path whose SandboxClaim never came to be, and recorded in the claim index as the
    // pipeline records what it serves.
    const admin = new Redis(world.redis.url);
    const index = new ClaimIndex(admin);
    try {
      const uid = randomUUID();
      const indexed = await fetch(`${node.agentUrl}/v1/claim`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          template: `registry.test/${ns}-pool:1`,
          claim_ref: formatNodeClaimRef({ door: 'crd', namespace: ns, name: 'indexed-ghost', uid }),
          ttl_seconds: 600,
        }),
      });
      const grant = claimGrantSchema.parse(await indexed.json());
      const recorded = await index.record(
        {
          id: grant.id,
          token: grant.token,
          deadline: grant.deadline,
          ownerAddr: grant.owner_addr ?? '',
          node: node.name,
          namespace: ns,
          warmPool: 'pool',
          claimRef: 'indexed-ghost',
          tier: 'warm',
          door: 'crd',
          owner: ownerMark({ door: 'crd', uid }),
        },
        '',
      );
      expect(recorded.ok).toBe(true);
    } finally {
      admin.disconnect();
    }
    // An HTTP claim: no SandboxClaim, and never the janitor's.
    const claimer = await serviceAccountToken(cluster, ns, 'claimer', ['create', 'delete']);
    const claimsPath = `/v1/namespaces/${ns}/claims`;
    const overHttp = { warmPool: 'pool', claimRef: 'over-http', ttlSeconds: 600 };
    expect((await callClaims(controlPlane?.claimsUrl ?? '', 'POST', claimsPath, claimer, overHttp)).status).toBe(200);
    // A node claim_ref warmpool did not write: never the janitor's either.
    const foreign = await fetch(`${node.agentUrl}/v1/claim`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ template: `registry.test/${ns}-pool:1`, claim_ref: `${ns}/not-ours`, ttl_seconds: 600 }),
    });
    expect(foreign.status).toBe(200);
    await sleep(600);

    // A janitor that sweeps every second from now on.
    await controlPlane?.close();
    await janitorSweeps(await start({}, 1_000), 2);
    expect(await metric('warmpool_controlplane_claim_janitor_releases_total')).toBe(2);
    expect(await heldAnywhere(`${ns}/ghost`)).toEqual([]);
    expect(await heldAnywhere(`${ns}/indexed-ghost`)).toEqual([]);
    const reader = new Redis(world.redis.url);
    try {
      expect(await new ClaimIndex(reader).lookup({ namespace: ns, door: 'crd' }, 'indexed-ghost')).toBeUndefined();
    } finally {
      reader.disconnect();
    }
    expect(await heldAnywhere(`${ns}/over-http`)).toHaveLength(1);
    expect(await heldAnywhere(`${ns}/alive`)).toHaveLength(1);
    expect(
      (await Promise.all(fleet.nodes.map(nodeClaims))).flat().filter((r) => r.claim_ref === `${ns}/not-ours`),
    ).toHaveLength(1);
    expect(await metric('warmpool_controlplane_claim_janitor_releases_total')).toBe(2);
    expect((await callClaims(controlPlane?.claimsUrl ?? '', 'DELETE', `${claimsPath}/over-http`, claimer)).status).toBe(
      204,
    );
    await controlPlane?.close();
    await start();
  });

  it('renews the lease of a claim without shutdownTime, so its sandbox outlives the lease', async () => {
    await controlPlane?.close();
    await start({ leaseSeconds: 3 });
    try {
      const ns = await world.namespace('renew');
      await drivenPool(ns, 'pool');
      await apply(cluster, sandboxClaim(ns, 'long', 'pool'));
      await readyClaim(ns, 'long');
      const first = decode((await getSecret(ns, 'long')) as KubeSecret)['deadline'] ?? '';
      await eventually(
        async () => {
          const now = decode((await getSecret(ns, 'long')) as KubeSecret)['deadline'] ?? '';
          return Date.parse(now) > Date.parse(first) ? now : undefined;
        },
        { what: "the Secret's deadline to move with a renewal" },
      );
      await sleep(4_000);
      expect(await heldAnywhere(`${ns}/long`)).toHaveLength(1);
      expect(ready(await getClaim(ns, 'long'))).toMatchObject({ status: 'True', reason: 'Claimed' });
    } finally {
      await controlPlane?.close();
      await start();
    }
  });

  it("leaves a user's own Secret of the claim's name untouched, releases the sandbox and says BadRequest", async () => {
    const ns = await world.namespace('taken');
    await drivenPool(ns, 'pool');
    await secretClient.create({
      metadata: { name: 'taken', namespace: ns },
      type: 'Opaque',
      data: { mine: Buffer.from('yes').toString('base64') },
    });
    await apply(cluster, sandboxClaim(ns, 'taken', 'pool'));
    const failed = await failedWith(ns, 'taken', 'BadRequest');
    expect(ready(failed)?.message).toContain('Secret');
    expect((await getSecret(ns, 'taken'))?.data).toEqual({ mine: Buffer.from('yes').toString('base64') });
    expect(await heldAnywhere(`${ns}/taken`)).toEqual([]);
    const made = await metric('warmpool_controlplane_sandboxclaim_results_total', '{result="claimed",reason=""}');
    const released = await metric('warmpool_controlplane_sandboxclaim_releases_total', '{cause="vanished"}');
    await sleep(1_000);
    expect(await metric('warmpool_controlplane_sandboxclaim_results_total', '{result="claimed",reason=""}')).toBe(made);
    expect(
      await metric('warmpool_controlplane_sandboxclaim_releases_total', '{cause="vanished"}'),
      'a refused claim is not claimed again and again',
    ).toBe(released);
    const claim = await getClaim(ns, 'taken');
    expect(claim?.metadata.annotations?.[SANDBOX_ID_ANNOTATION]).toBeUndefined();
    expect(claim?.metadata.finalizers ?? []).toEqual([]);
  });

  it('processes SandboxClaims on the leader only: a standby replica writes nothing', async () => {
    const standby = await world.controlPlane(system, { claims: { redis: { url: world.redis.url } } });
    try {
      await eventually(() => standby.ready(), { what: "the standby's caches to sync" });
      expect(standby.isLeader()).toBe(false);
      const ns = await world.namespace('standby');
      await drivenPool(ns, 'pool');
      await apply(cluster, sandboxClaim(ns, 'one', 'pool'));
      await readyClaim(ns, 'one');
      const writes = await standby.registry.getSingleMetricAsString(
        'warmpool_controlplane_sandboxclaim_api_writes_total',
      );
      expect(writes).not.toMatch(/_total\{[^}]*\} [1-9]/);
    } finally {
      await standby.close();
    }
  });

  it('serves a SandboxClaim its own sandbox beside an HTTP claim of the same name, and never releases the HTTP one', async () => {
    const ns = await world.namespace('shared');
    await drivenPool(ns, 'pool');
    const claimer = await serviceAccountToken(cluster, ns, 'claimer', ['create', 'delete']);
    const claimsPath = `/v1/namespaces/${ns}/claims`;
    // Once the pipeline's caches have the pool.
    const http = await eventually(
      async () => {
        const answer = await callClaims(controlPlane?.claimsUrl ?? '', 'POST', claimsPath, claimer, {
          warmPool: 'pool',
          claimRef: 'shared',
          ttlSeconds: 600,
        });
        return answer.status === 200 ? claimBodySchema.parse(answer.body) : undefined;
      },
      { what: 'an HTTP claim' },
    );
    await apply(
      cluster,
      sandboxClaim(ns, 'shared', 'pool', { lifecycle: { shutdownTime: new Date(Date.now() + 60_000).toISOString() } }),
    );
    await readyClaim(ns, 'shared');
    const held = await heldAnywhere(`${ns}/shared`);
    expect(held).toHaveLength(2);
    expect(held.map((row) => row.id)).toContain(http?.id);
    await kubectl(cluster, ['delete', 'sandboxclaim', 'shared', '-n', ns]);
    await eventually(async () => (await heldAnywhere(`${ns}/shared`)).length === 1, { what: 'its sandbox released' });
    expect((await heldAnywhere(`${ns}/shared`)).map((row) => row.id)).toEqual([http?.id]);
    expect((await callClaims(controlPlane?.claimsUrl ?? '', 'DELETE', `${claimsPath}/shared`, claimer)).status).toBe(
      204,
    );
  });

  it("never hands a SandboxClaim's sandbox (or its token) to an HTTP client naming the claim: 400 on the pool and Env paths, 404 to a release", async () => {
    const ns = await world.namespace('steal');
    await drivenPool(ns, 'pool');
    await apply(cluster, sandboxClaim(ns, 'mine', 'pool'), sandboxEnv(ns, 'env', { pool: 'main' }));
    await readyClaim(ns, 'mine');
    const secretToken = decode((await getSecret(ns, 'mine')) as KubeSecret)['token'];
    const creator = await serviceAccountToken(cluster, ns, 'creator', ['create', 'delete']);
    const claimsUrl = controlPlane?.claimsUrl ?? '';
    for (const body of [
      { warmPool: 'pool', claimRef: 'mine' },
      { env: 'env', claimRef: 'mine' },
    ]) {
      const answer = await callClaims<{ reason?: string; token?: string }>(
        claimsUrl,
        'POST',
        `/v1/namespaces/${ns}/claims`,
        creator,
        body,
      );
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.reason).toBe('BadRequest');
      expect(JSON.stringify(answer.body)).not.toContain(secretToken);
    }
    const release = await callClaims(claimsUrl, 'DELETE', `/v1/namespaces/${ns}/claims/mine`, creator);
    expect(release.status).toBe(404);
    expect(await heldAnywhere(`${ns}/mine`)).toHaveLength(1);
    expect(ready(await getClaim(ns, 'mine'))).toMatchObject({ status: 'True', reason: 'Claimed' });
  });
});
