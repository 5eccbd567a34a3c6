// The Sandbox API through the real apiserver's aggregation layer: kubectl
// against kube-apiserver, which proxies agents.x-k8s.io/v1beta1 to the
// control plane on loopback (an APIService and an ExternalName Service; the
// Sandbox CRD removed). Claims are made through the HTTP claim API and with
// `kubectl create`; three real node agents over fake-sandboxd hold them;
// Redis is real. Nothing here is served from etcd.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  apiVersionOf,
  claimBodySchema,
  DRIVER_ANNOTATION,
  DRIVER_SANDBOXD,
  claimNameOf,
  parseNodeClaimRef,
  SandboxType,
  type ClaimBody,
  type Sandbox,
} from '@warmpool/api';
import {
  etcdKeyCount,
  eventually,
  findBinary,
  issueCertificate,
  ManagedChild,
  sandboxClaim,
  template,
  warmPool,
  type TestCluster,
  type TestRedis,
} from '@warmpool/harness';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlane } from '../../src/options.js';
import { ClaimIndex } from '../../src/provisioning/claim-index.js';
import { callClaims, claimsOnNodes, serviceAccountToken } from '../support/claims.js';
import { claimsReady } from '../support/metrics.js';
import { startControlPlane } from '../support/control-plane.js';
import type { Fleet } from '../support/fleet.js';
import { apply, kubectl } from '../support/objects.js';
import { callDirect, registerSandboxApi, servingPki, watchDirect, type ServingPki } from '../support/sandbox-api.js';
import { testWorld, type TestWorld } from '../support/world.js';

const TOKEN = 'fleet-token-for-sandbox-api-tests';
const IMAGE = 'registry.test/sandbox-api:1';

describe('the Sandbox API behind the aggregation layer (real apiserver, Redis, agents; kubectl only)', () => {
  /** Whether a node's claim_ref (or an inventory entry's) names the claim `name` of this spec's namespace. */
  const heldAs = (nodeRef: string | undefined, name: string): boolean => {
    const owner = parseNodeClaimRef(nodeRef);
    return owner !== undefined && owner.namespace === ns && claimNameOf(owner).name === name;
  };
  let world: TestWorld;
  let cluster: TestCluster;
  let redis: TestRedis;
  let fleet: Fleet;
  let dir: string;
  let ns: string;
  let cp: ControlPlane;
  let pki: ServingPki;
  let port: number;
  let claimer: string;
  const watches: ManagedChild[] = [];

  const claim = async (body: Record<string, unknown>): Promise<ClaimBody> => {
    const answer = await callClaims(cp.claimsUrl ?? '', 'POST', `/v1/namespaces/${ns}/claims`, claimer, {
      warmPool: 'python',
      ...body,
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return claimBodySchema.parse(answer.body);
  };
  const release = async (claimRef: string): Promise<void> => {
    expect(
      (await callClaims(cp.claimsUrl ?? '', 'DELETE', `/v1/namespaces/${ns}/claims/${claimRef}`, claimer)).status,
    ).toBe(204);
  };
  /** The Sandboxes of the spec's namespace that the replica serving on `apiPort` lists, asked as the front proxy. */
  const sandboxesServedBy = async (apiPort: number): Promise<Sandbox[]> => {
    const answer = await callDirect(
      apiPort,
      pki.ca.certPem,
      `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes`,
      {
        client: cluster.pki.frontProxyClient,
        headers: { 'x-remote-user': 'someone', 'x-remote-group': 'system:masters' },
      },
    );
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return (answer.body as { items: Sandbox[] }).items;
  };
  const getJson = async (args: string[]): Promise<Sandbox & { items?: Sandbox[] }> =>
    JSON.parse(await kubectl(cluster, [...args, '-o', 'json'])) as Sandbox & { items?: Sandbox[] };

  beforeAll(async () => {
    world = await testWorld({ name: 'cp-sandbox-api', token: TOKEN, redis: true, fleet: { count: 3, capacity: 40 } });
    ({ cluster, redis, fleet, dir } = world);
    pki = servingPki();
    writeFileSync(join(dir, 'serving.crt'), pki.serving.certPem);
    writeFileSync(join(dir, 'serving.key'), pki.serving.keyPem);
    ns = await world.namespace('sandboxes');
    claimer = await serviceAccountToken(cluster, ns, 'claimer', ['create', 'get', 'update', 'delete']);
    await apply(cluster, template(ns, 'tpl', IMAGE), warmPool(ns, 'python', 'tpl', 6));
    // Who may read Sandboxes: `viewer` in this namespace; `stranger` nowhere.
    await kubectl(cluster, [
      'create',
      'role',
      'sandbox-viewer',
      '-n',
      ns,
      '--verb=get,list,watch',
      '--resource=sandboxes.agents.x-k8s.io',
    ]);
    await kubectl(cluster, [
      'create',
      'rolebinding',
      'sandbox-viewer',
      '-n',
      ns,
      '--role=sandbox-viewer',
      '--user=viewer',
    ]);
    cp = await world.controlPlane('default', {
      claims: world.claimsOptions(),
      sandboxApi: {
        listen: { host: '127.0.0.1', port: 0 },
        tls: { certFile: join(dir, 'serving.crt'), keyFile: join(dir, 'serving.key') },
      },
    });
    port = Number(new URL(cp.sandboxApiUrl ?? 'https://x:0').port);
    await registerSandboxApi(cluster, port, pki.ca.certPem);
    await eventually(() => cp.isLeader(), { what: 'the replica leads' });
    await eventually(async () => (await fleet.warmOf(`${IMAGE}|none|small`)).every((w) => w === 2), {
      what: '2 warm on every node',
      timeoutMs: 30_000,
    });
    await eventually(async () => (await claimsReady(cp)) && cp.notReadyReasons().length === 0, {
      what: 'ready to claim and to serve Sandboxes',
    });
  });

  afterAll(async () => {
    // Watches are stopped as one of the world's cleanup steps, so a failing stop does not skip the rest.
    world?.defer(() => Promise.all(watches.map((watch) => watch.stop('SIGKILL'))));
    await world?.close();
  });

  it('serves discovery: kubectl api-resources lists sandboxes of agents.x-k8s.io/v1beta1, namespaced', async () => {
    // The apiserver's merged discovery takes the APIService's documents in a moment after it is Available (longer
    // on a loaded machine).
    await eventually(
      async () =>
        /^sandboxes\s+agents\.x-k8s\.io\/v1beta1\s+true\s+Sandbox/m.test(
          await kubectl(cluster, ['api-resources', '--api-group=agents.x-k8s.io', '--no-headers']),
        ),
      { what: 'kubectl api-resources lists sandboxes', timeoutMs: 30_000, intervalMs: 500 },
    );
    // The apiserver fetches the OpenAPI documents of an APIService shortly after it becomes Available.
    await eventually(
      async () =>
        (
          await cluster.kubectl(['explain', 'sandboxes.status.nodeName', '--api-version=agents.x-k8s.io/v1beta1'])
        ).stdout.includes('The node holding the sandbox'),
      { what: 'kubectl explain of a Sandbox field', timeoutMs: 30_000, intervalMs: 1_000 },
    );
  }, 60_000);

  it('gets a sandbox the moment its claim is answered: name = claimRef, namespace, node, owner address, Ready, deadline', async () => {
    const claimed = await claim({ claimRef: 'fresh-1', ttlSeconds: 600 });
    const sandbox = await getJson(['get', 'sandbox', 'fresh-1', '-n', ns]);
    expect(sandbox).toMatchObject({
      // The wire string as upstream names it, not libs/api's constant: what kubectl users get back.
      apiVersion: 'agents.x-k8s.io/v1beta1',
      kind: 'Sandbox',
      metadata: { name: 'fresh-1', namespace: ns, labels: { 'warmpool.dev/pool': 'python' } },
      status: {
        nodeName: claimed.node,
        podIPs: ['127.0.0.1'],
        ownerAddr: claimed.ownerAddr,
        deadline: claimed.deadline,
        sandboxID: claimed.id,
        tier: 'warm',
        conditions: [expect.objectContaining({ type: 'Ready', status: 'True' })],
      },
    });
    const yaml = await kubectl(cluster, ['get', 'sandbox', 'fresh-1', '-n', ns, '-o', 'yaml']);
    expect(yaml).toContain('kind: Sandbox');
    expect(yaml).toContain(`nodeName: ${claimed.node}`);
  });

  it('prints NAME, NODE, POOL, TIER, DEADLINE, AGE for kubectl get, more with -o wide, and the NAMESPACE with -A', async () => {
    const claimed = await claim({ claimRef: 'printed-1' });
    const table = await kubectl(cluster, ['get', 'sandboxes', '-n', ns]);
    expect(table.split('\n')[0]).toMatch(/^NAME\s+NODE\s+POOL\s+TIER\s+DEADLINE\s+AGE\s*$/);
    expect(table).toMatch(
      new RegExp(
        `^printed-1\\s+${claimed.node}\\s+python\\s+warm\\s+${claimed.deadline.replace(/[.]/g, '\\.')}\\s+\\d+s`,
        'm',
      ),
    );
    const wide = await kubectl(cluster, ['get', 'sandboxes', '-n', ns, '-o', 'wide']);
    expect(wide.split('\n')[0]).toMatch(
      /^NAME\s+NODE\s+POOL\s+TIER\s+DEADLINE\s+AGE\s+OWNER\s+SANDBOX ID\s+KEY\s+CLUSTER\s*$/,
    );
    expect(wide).toMatch(
      new RegExp(`^printed-1\\s.*${claimed.id}\\s+${IMAGE.replace(/[.]/g, '\\.')}/none/small\\s*$`, 'm'),
    );
    // The KEY comes with the claim, not only with the node's next publish: the claimed event carries it.
    const admin = new Redis(redis.url);
    try {
      const events = (await admin.xrevrange(new ClaimIndex(admin).eventsKey, '+', '-', 'COUNT', 50)).map(
        ([, f]) => JSON.parse(f[1] ?? '{}') as { op: string; record?: { id: string; key?: unknown } },
      );
      expect(events.find((e) => e.op === 'claimed' && e.record?.id === claimed.id)?.record?.key).toEqual({
        template: IMAGE,
        net: 'none',
        size: 'small',
      });
    } finally {
      admin.disconnect();
    }
    const all = await kubectl(cluster, ['get', 'sandboxes', '-A']);
    expect(all.split('\n')[0]).toMatch(/^NAMESPACE\s+NAME\s+NODE/);
    expect(all).toMatch(new RegExp(`^${ns}\\s+printed-1\\s+${claimed.node}`, 'm'));
  });

  it("lists every namespace's sandboxes from what the nodes hold, and filters by label and field selectors", async () => {
    const claims = await Promise.all(['sel-1', 'sel-2', 'sel-3', 'sel-4'].map((claimRef) => claim({ claimRef })));
    const names = (list: { items?: Sandbox[] }): string[] =>
      (list.items ?? [])
        .map((s) => s.metadata.name ?? '')
        .filter((n) => n.startsWith('sel-'))
        .sort();
    await eventually(async () => names(await getJson(['get', 'sandboxes', '-A'])).length === 4, {
      what: 'the four in list -A',
    });
    expect(names(await getJson(['get', 'sandboxes', '-n', ns, '-l', 'warmpool.dev/pool=python']))).toEqual([
      'sel-1',
      'sel-2',
      'sel-3',
      'sel-4',
    ]);
    expect(names(await getJson(['get', 'sandboxes', '-n', ns, '-l', 'warmpool.dev/pool=other']))).toEqual([]);
    const node = claims[0]?.node ?? '';
    const onNode = claims
      .filter((c) => c.node === node)
      .map((c) => c.claimRef)
      .sort();
    expect(names(await getJson(['get', 'sandboxes', '-n', ns, '--field-selector', `status.nodeName=${node}`]))).toEqual(
      onNode,
    );
    expect(names(await getJson(['get', 'sandboxes', '-A', '--field-selector', `spec.nodeName=${node}`]))).toEqual(
      onNode,
    );
    expect(
      names(await getJson(['get', 'sandboxes', '-n', ns, '--field-selector', `status.nodeName!=${node}`])),
    ).toEqual(
      claims
        .filter((c) => c.node !== node)
        .map((c) => c.claimRef)
        .sort(),
    );
    // What the nodes hold is published: each claim is an entry of its node's NodeInventory.
    await eventually(
      async () => {
        const inventories = JSON.parse(await kubectl(cluster, ['get', 'nodeinventories', '-o', 'json'])) as {
          items: Array<{ metadata: { name: string }; status?: { entries?: Array<{ claimRef?: string; id: string }> } }>;
        };
        return claims.every(
          (c) =>
            inventories.items
              .find((i) => i.metadata.name === c.node)
              ?.status?.entries?.some((e) => heldAs(e.claimRef, c.claimRef) && e.id === c.id) === true,
        );
      },
      { what: "the claims in their nodes' NodeInventory entries", timeoutMs: 20_000 },
    );
    const bad = await cluster.kubectl(['get', 'sandboxes', '-n', ns, '--field-selector', 'status.phase=Running']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('field label not supported');
  });

  it('watches: kubectl get -w sees a claim ADDED and its release DELETED', async () => {
    const watch = new ManagedChild({
      name: 'kubectl get -w',
      command: findBinary('kubectl'),
      args: [
        `--kubeconfig=${cluster.kubeconfigPath}`,
        'get',
        'sandboxes',
        '-n',
        ns,
        '-w',
        '--output-watch-events',
        '--watch-only',
      ],
      logFile: join(dir, 'kubectl-watch.log'),
      stdoutFile: join(dir, 'kubectl-watch.out'),
    });
    watches.push(watch);
    const lines = (): string[] => watch.stdout().split('\n');
    // The watch is open once a claim made now shows up in it (one made before it opened is not replayed: --watch-only).
    let seen: string | undefined;
    let attempt = 0;
    await eventually(
      async () => {
        seen = lines()
          .map((l) => /^ADDED\s+(watched-\d+)\s/.exec(l)?.[1])
          .find((name) => name !== undefined);
        if (seen !== undefined) return true;
        await claim({ claimRef: `watched-${++attempt}` });
        return false;
      },
      { what: 'a claim ADDED in kubectl get -w', timeoutMs: 20_000, intervalMs: 1_000 },
    );
    await release(seen ?? '');
    await eventually(() => lines().some((l) => new RegExp(`^DELETED\\s+${seen}\\s`).test(l)), {
      what: () => `DELETED ${seen} in kubectl get -w (stderr: ${watch.log()})`,
      timeoutMs: 20_000,
    });
    await watch.stop();
  }, 60_000);

  it('creates with kubectl create (a claim from the named pool) and deletes with kubectl delete (a release on the node)', async () => {
    const body = {
      apiVersion: apiVersionOf(SandboxType),
      kind: SandboxType.kind,
      metadata: { name: 'made-by-kubectl' },
      spec: { warmPoolRef: { name: 'python' }, ttlSeconds: 300 },
    };
    const created = await kubectl(cluster, ['create', '-n', ns, '-f', '-'], JSON.stringify(body));
    expect(created).toContain('sandbox.agents.x-k8s.io/made-by-kubectl created');
    const held = (await claimsOnNodes(fleet, TOKEN)).filter((c) => heldAs(c.claimRef, 'made-by-kubectl'));
    expect(held).toHaveLength(1);
    expect((await getJson(['get', 'sandbox', 'made-by-kubectl', '-n', ns])).status?.nodeName).toBe(held[0]?.node);
    const again = await cluster.kubectl(['create', '-n', ns, '-f', '-'], { input: JSON.stringify(body) });
    expect(again.stderr).toContain('AlreadyExists');
    const noPool = await cluster.kubectl(['create', '-n', ns, '-f', '-'], {
      input: JSON.stringify({ ...body, metadata: { name: 'no-pool' }, spec: { warmPoolRef: { name: 'missing' } } }),
    });
    expect(noPool.code).not.toBe(0);
    // The status the claim API answers PoolNotFound with (404), as a Status naming the field.
    expect(noPool.stderr).toContain('(NotFound)');
    expect(noPool.stderr).toContain('spec.warmPoolRef.name');

    const generated = await kubectl(
      cluster,
      ['create', '-n', ns, '-o', 'name', '-f', '-'],
      JSON.stringify({ ...body, metadata: { generateName: 'gen-' } }),
    );
    expect(generated.trim()).toMatch(/^sandbox\.agents\.x-k8s\.io\/gen-[0-9a-f]{5}$/);
    const noSpec = await cluster.kubectl(['create', '-n', ns, '-f', '-'], {
      input: JSON.stringify({ ...body, metadata: { name: 'no-spec' }, spec: {} }),
    });
    expect(noSpec.stderr).toContain('spec.warmPoolRef');
    expect((await claimsOnNodes(fleet, TOKEN)).some((c) => heldAs(c.claimRef, 'no-spec'))).toBe(false);

    expect(await kubectl(cluster, ['delete', 'sandbox', 'made-by-kubectl', '-n', ns])).toContain(
      '"made-by-kubectl" deleted',
    );
    expect((await claimsOnNodes(fleet, TOKEN)).filter((c) => heldAs(c.claimRef, 'made-by-kubectl'))).toEqual([]);
    const gone = await cluster.kubectl(['get', 'sandbox', 'made-by-kubectl', '-n', ns]);
    expect(gone.stderr).toContain('NotFound');
  });

  it('forbids a user without RBAC, and lets a viewer read but not delete', async () => {
    await claim({ claimRef: 'guarded-1' });
    const stranger = await cluster.kubectl(['get', 'sandboxes', '-n', ns, '--as=stranger']);
    expect(stranger.code).not.toBe(0);
    expect(stranger.stderr).toContain('Forbidden');
    expect(await kubectl(cluster, ['get', 'sandbox', 'guarded-1', '-n', ns, '--as=viewer'])).toContain('guarded-1');
    const deleting = await cluster.kubectl(['delete', 'sandbox', 'guarded-1', '-n', ns, '--as=viewer']);
    expect(deleting.stderr).toContain('Forbidden');
    expect((await claimsOnNodes(fleet, TOKEN)).some((c) => heldAs(c.claimRef, 'guarded-1'))).toBe(true);
  });

  it('refuses, itself, anyone but the front proxy, anonymous requests, and users the SubjectAccessReview denies', async () => {
    const path = `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes`;
    const proxy = cluster.pki.frontProxyClient;
    const impostorCa = issueCertificate({ subject: { commonName: 'impostor-ca' }, isCa: true });
    const impostor = issueCertificate({
      subject: { commonName: 'front-proxy-client' },
      issuer: impostorCa,
      usages: ['client'],
    });
    const notAllowedName = issueCertificate({
      subject: { commonName: 'someone-else' },
      issuer: cluster.pki.frontProxyCa,
      usages: ['client'],
    });
    const asUser = (user: string): Record<string, string> => ({ 'x-remote-user': user });
    expect((await callDirect(port, pki.ca.certPem, path, { headers: asUser('admin') })).status).toBe(401);
    expect((await callDirect(port, pki.ca.certPem, path, { client: impostor, headers: asUser('admin') })).status).toBe(
      401,
    );
    expect(
      (await callDirect(port, pki.ca.certPem, path, { client: notAllowedName, headers: asUser('admin') })).status,
    ).toBe(401);
    expect((await callDirect(port, pki.ca.certPem, path, { client: proxy })).status).toBe(401);
    const denied = await callDirect(port, pki.ca.certPem, path, { client: proxy, headers: asUser('stranger') });
    expect(denied).toMatchObject({ status: 403, body: { kind: 'Status', reason: 'Forbidden' } });
    const viewer = await callDirect(port, pki.ca.certPem, path, { client: proxy, headers: asUser('viewer') });
    expect(viewer).toMatchObject({ status: 200, body: { kind: 'SandboxList' } });
    const admins = await callDirect(port, pki.ca.certPem, path, {
      client: proxy,
      headers: { 'x-remote-user': 'someone', 'x-remote-group': 'system:masters' },
    });
    expect(admins.status).toBe(200);
    // Bad requests: a clear Status with a machine-readable reason, and nothing claimed.
    const admin = { client: proxy, headers: { 'x-remote-user': 'someone', 'x-remote-group': 'system:masters' } };
    expect(await callDirect(port, pki.ca.certPem, `${path}/x`, { ...admin, method: 'PATCH' })).toMatchObject({
      status: 405,
      body: { reason: 'MethodNotAllowed' },
    });
    expect(
      await callDirect(port, pki.ca.certPem, `${path}?labelSelector=${encodeURIComponent('a in b')}`, admin),
    ).toMatchObject({ status: 400, body: { reason: 'BadRequest' } });
    expect(
      await callDirect(port, pki.ca.certPem, path, {
        ...admin,
        headers: { ...admin.headers, accept: 'application/vnd.kubernetes.protobuf' },
      }),
    ).toMatchObject({ status: 406, body: { reason: 'NotAcceptable' } });
    expect(
      await callDirect(
        port,
        pki.ca.certPem,
        '/apis/agents.x-k8s.io/v1beta1/namespaces/Not_A_Namespace/sandboxes',
        admin,
      ),
    ).toMatchObject({ status: 400 });
    expect(
      await callDirect(port, pki.ca.certPem, `${path}/x?dryRun=All`, { ...admin, method: 'DELETE' }),
    ).toMatchObject({ status: 400, body: { reason: 'BadRequest' } });
    // A resourceVersion this replica never handed out (another replica's, or too old): the watch says 410 and the
    // client relists.
    const gone = await callDirect(port, pki.ca.certPem, `${path}?watch=true&resourceVersion=12345`, {
      client: proxy,
      headers: asUser('viewer'),
    });
    expect(gone.status).toBe(200);
    expect(gone.body).toMatchObject({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } });
  });

  it("streams watches as client-go's reflectors ask: initial events, the end-of-initial-events bookmark, field selectors, timeoutSeconds", async () => {
    const claimed = await claim({ claimRef: 'streamed-1' });
    const path = `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1&fieldSelector=metadata.name%3Dstreamed-1`;
    const answer = await callDirect(port, pki.ca.certPem, path, {
      client: cluster.pki.frontProxyClient,
      headers: { 'x-remote-user': 'viewer' },
    });
    expect(answer.status).toBe(200);
    const events = String(answer.body)
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; object: Sandbox });
    const seen = events.map((e) => `${e.type} ${e.object.metadata.name ?? ''}`);
    expect(seen.slice(0, 2)).toEqual(['ADDED streamed-1', 'BOOKMARK ']);
    // Its node publishing it within that second (claim time, key) is a MODIFIED; nothing else is in the selector.
    expect(seen.slice(2).every((e) => e === 'MODIFIED streamed-1')).toBe(true);
    expect(events[0]?.object.status?.sandboxID).toBe(claimed.id);
    expect(events[1]?.object.metadata.annotations).toEqual({ 'k8s.io/initial-events-end': 'true' });
    expect(Number(events[1]?.object.metadata.resourceVersion)).toBeGreaterThanOrEqual(
      Number(events[0]?.object.metadata.resourceVersion),
    );
  });

  it('refuses to create a Sandbox named like a SandboxClaim, even one not served yet: 409 AlreadyExists, nothing claimed', async () => {
    // A SandboxClaim of a pool that does not exist: it exists, and is never served. Addressed to warmpool, it is told
    // PoolNotFound, which shows the replica's caches hold it.
    await apply(
      cluster,
      sandboxClaim(ns, 'twin', 'no-such-pool', { annotations: { [DRIVER_ANNOTATION]: DRIVER_SANDBOXD } }),
    );
    await eventually(
      async () =>
        (
          await kubectl(cluster, ['get', 'sandboxclaim', 'twin', '-n', ns, '-o', 'jsonpath={.status.conditions}'])
        ).includes('PoolNotFound'),
      { what: 'twin seen by the replica' },
    );
    const before = (await claimsOnNodes(fleet, TOKEN)).length;
    const body = {
      apiVersion: apiVersionOf(SandboxType),
      kind: SandboxType.kind,
      metadata: { name: 'twin' },
      spec: { warmPoolRef: { name: 'python' } },
    };
    const created = await cluster.kubectl(['create', '-n', ns, '-f', '-'], { input: JSON.stringify(body) });
    expect(created.code).not.toBe(0);
    expect(created.stderr).toContain('AlreadyExists');
    expect((await claimsOnNodes(fleet, TOKEN)).length).toBe(before);
    await kubectl(cluster, ['delete', 'sandboxclaim', 'twin', '-n', ns]);
  });

  it("refuses to delete a SandboxClaim's sandbox (409 Conflict: delete the SandboxClaim instead) and releases nothing", async () => {
    await apply(cluster, sandboxClaim(ns, 'victim', 'python'));
    const readyClaim = async (): Promise<string | undefined> => {
      const claim = JSON.parse(await kubectl(cluster, ['get', 'sandboxclaim', 'victim', '-n', ns, '-o', 'json'])) as {
        status?: { conditions?: Array<{ type: string; status: string }> };
      };
      return claim.status?.conditions?.find((c) => c.type === 'Ready')?.status;
    };
    await eventually(async () => (await readyClaim()) === 'True', { what: 'SandboxClaim victim Ready' });
    // The sandbox id, from the claim's Secret.
    const id = Buffer.from(
      await kubectl(cluster, ['get', 'secret', 'victim', '-n', ns, '-o', 'jsonpath={.data.id}']),
      'base64',
    ).toString('utf8');
    expect(id).toMatch(/^sb_/);
    // Someone who may delete Sandboxes and nothing else: no rights on SandboxClaims.
    await kubectl(cluster, [
      'create',
      'role',
      'sandbox-deleter',
      '-n',
      ns,
      '--verb=delete',
      '--resource=sandboxes.agents.x-k8s.io',
    ]);
    await kubectl(cluster, [
      'create',
      'rolebinding',
      'sandbox-deleter',
      '-n',
      ns,
      '--role=sandbox-deleter',
      '--user=deleter',
    ]);

    const deleting = await cluster.kubectl(['delete', 'sandbox', 'victim', '-n', ns, '--as=deleter']);
    expect(deleting.code).not.toBe(0);
    expect(deleting.stderr).toContain('Conflict');
    expect(deleting.stderr).toContain('delete the SandboxClaim instead');
    const direct = await callDirect(
      port,
      pki.ca.certPem,
      `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes/victim`,
      {
        client: cluster.pki.frontProxyClient,
        headers: { 'x-remote-user': 'deleter' },
        method: 'DELETE',
      },
    );
    expect(direct).toMatchObject({ status: 409, body: { kind: 'Status', reason: 'Conflict', code: 409 } });
    // Nor by its sandbox id, which names no Sandbox.
    const byId = await callDirect(
      port,
      pki.ca.certPem,
      `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes/${id}`,
      {
        client: cluster.pki.frontProxyClient,
        headers: { 'x-remote-user': 'someone', 'x-remote-group': 'system:masters' },
        method: 'DELETE',
      },
    );
    expect(byId).toMatchObject({ status: 404, body: { kind: 'Status', reason: 'NotFound' } });

    expect((await claimsOnNodes(fleet, TOKEN)).filter((c) => heldAs(c.claimRef, 'victim')).map((c) => c.id)).toEqual([
      id,
    ]);
    expect(await readyClaim()).toBe('True');
    await kubectl(cluster, ['delete', 'sandboxclaim', 'victim', '-n', ns]);
  });

  it('creates a name exactly once: of 10 parallel creates over two replicas, one 201, nine 409 AlreadyExists, one sandbox', async () => {
    const second = await world.controlPlane('default', {
      claims: world.claimsOptions(),
      sandboxApi: {
        listen: { host: '127.0.0.1', port: 0 },
        tls: { certFile: join(dir, 'serving.crt'), keyFile: join(dir, 'serving.key') },
      },
    });
    try {
      await eventually(async () => (await claimsReady(second)) && second.notReadyReasons().length === 0, {
        what: 'the second replica ready to claim and to serve Sandboxes',
      });
      const ports = [port, Number(new URL(second.sandboxApiUrl ?? 'https://x:0').port)];
      const body = {
        apiVersion: apiVersionOf(SandboxType),
        kind: SandboxType.kind,
        metadata: { name: 'once' },
        spec: { warmPoolRef: { name: 'python' } },
      };
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          callDirect(ports[i % 2] ?? port, pki.ca.certPem, `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes`, {
            client: cluster.pki.frontProxyClient,
            headers: { 'x-remote-user': 'someone', 'x-remote-group': 'system:masters' },
            method: 'POST',
            body,
          }),
        ),
      );
      expect(answers.map((a) => a.status).sort()).toEqual([201, ...Array<number>(9).fill(409)]);
      for (const refused of answers.filter((a) => a.status === 409))
        expect(refused.body).toMatchObject({ kind: 'Status', reason: 'AlreadyExists', details: { name: 'once' } });
      expect((await claimsOnNodes(fleet, TOKEN)).filter((c) => heldAs(c.claimRef, 'once'))).toHaveLength(1);
    } finally {
      await second.close();
    }
  });

  it('refuses a create of a name whose claim the index lost, from what the Sandbox view holds: 409, no second sandbox', async () => {
    const body = {
      apiVersion: apiVersionOf(SandboxType),
      kind: SandboxType.kind,
      metadata: { name: 'index-lost' },
      spec: { warmPoolRef: { name: 'python' } },
    };
    await kubectl(cluster, ['create', '-n', ns, '-f', '-'], JSON.stringify(body));
    await eventually(async () => (await sandboxesServedBy(port)).some((s) => s.metadata.name === 'index-lost'), {
      what: 'index-lost served',
    });
    const scope = { namespace: ns, door: 'http' } as const;
    // Redis may lose any key.
    const admin = new Redis(redis.url);
    const index = new ClaimIndex(admin);
    const record = await index.lookup(scope, 'index-lost');
    expect(record).toBeDefined();
    try {
      await admin.del(index.refKey(scope, 'index-lost'), index.idKey(ns, record?.id ?? ''));
      const again = await cluster.kubectl(['create', '-n', ns, '-f', '-'], { input: JSON.stringify(body) });
      expect(again.code).not.toBe(0);
      expect(again.stderr).toContain('AlreadyExists');
      expect((await claimsOnNodes(fleet, TOKEN)).filter((c) => heldAs(c.claimRef, 'index-lost'))).toHaveLength(1);
    } finally {
      // As it was, for the specs after this one.
      if (record !== undefined) await index.record(record, '');
      admin.disconnect();
    }
  });

  it('answers 400 BadRequest (a Status) to a watch whose resourceVersion or timeoutSeconds is not a number, and 405 to a HEAD watch', async () => {
    const path = `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes?watch=true`;
    for (const query of ['resourceVersion=abc', 'resourceVersion=-1', 'timeoutSeconds=abc', 'timeoutSeconds=1.5']) {
      const answer = await callDirect(port, pki.ca.certPem, `${path}&${query}`, {
        client: cluster.pki.frontProxyClient,
        headers: { 'x-remote-user': 'viewer' },
      });
      expect(answer, query).toMatchObject({ status: 400, body: { kind: 'Status', reason: 'BadRequest', code: 400 } });
    }
    // HEAD would open a stream that nobody reads: refused (405) before it starts.
    const head = await callDirect(port, pki.ca.certPem, path, {
      method: 'HEAD',
      client: cluster.pki.frontProxyClient,
      headers: { 'x-remote-user': 'viewer' },
    });
    expect(head.status).toBe(405);
  });

  it("sends a watch's response headers at once, before any event (client-go's Watch() waits for them)", async () => {
    const watch = watchDirect(
      port,
      pki.ca.certPem,
      `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes?watch=true&fieldSelector=metadata.name%3Dno-such-sandbox&timeoutSeconds=600`,
      { client: cluster.pki.frontProxyClient, headers: { 'x-remote-user': 'viewer' } },
    );
    try {
      await eventually(() => watch.response !== undefined, { what: 'the response headers of a watch with no event' });
      expect(watch.response?.status).toBe(200);
      expect(watch.response?.headers['content-type']).toBe('application/json');
      expect(watch.events()).toEqual([]);
      expect(watch.ended).toBe(false);
    } finally {
      watch.close();
    }
  });

  it("through the aggregator, a watch with nothing to report gets its headers at once, and a bookmark when it asks (client-go's Watch() with a deadline)", async () => {
    // As upstream's Go client does: list, then watch from the list's resourceVersion, in a namespace where nothing
    // happens. The apiserver's proxy passes the headers on only once the extension server has sent them.
    const empty = await world.namespace('no-sandboxes');
    const list = JSON.parse(
      await kubectl(cluster, ['get', '--raw', `/apis/agents.x-k8s.io/v1beta1/namespaces/${empty}/sandboxes`]),
    ) as { metadata: { resourceVersion: string } };
    const rv = list.metadata.resourceVersion;
    expect(rv).not.toBe('');
    const apiserverPort = Number(new URL(cluster.server).port);
    const open = (query: string) =>
      watchDirect(
        apiserverPort,
        cluster.pki.ca.certPem,
        `/apis/agents.x-k8s.io/v1beta1/namespaces/${empty}/sandboxes?watch=true&resourceVersion=${rv}&timeoutSeconds=600${query}`,
        { client: cluster.pki.admin },
      );
    const plain = open('');
    const bookmarked = open('&allowWatchBookmarks=true');
    try {
      await eventually(() => plain.response !== undefined, {
        what: 'the response headers of a watch with nothing to report, through the apiserver',
        timeoutMs: 5_000,
      });
      expect(plain.response?.status).toBe(200);
      expect(plain.events()).toEqual([]);
      await eventually(() => bookmarked.events().some((e) => e.type === 'BOOKMARK'), {
        what: 'a BOOKMARK on a watch that asked for bookmarks, through the apiserver',
        timeoutMs: 5_000,
      });
      expect(bookmarked.events().every((e) => e.type === 'BOOKMARK')).toBe(true);
      expect(plain.ended || bookmarked.ended).toBe(false);
    } finally {
      plain.close();
      bookmarked.close();
    }
  });

  it('keeps a watch open for a timeoutSeconds past what a timer holds (capped, never overflowing)', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning.name);
    process.on('warning', onWarning);
    const watch = watchDirect(
      port,
      pki.ca.certPem,
      `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes?watch=true&fieldSelector=metadata.name%3Dlong-watched&timeoutSeconds=2147484`,
      { client: cluster.pki.frontProxyClient, headers: { 'x-remote-user': 'viewer' } },
    );
    try {
      await eventually(() => watch.response !== undefined, { what: 'the watch answered' });
      await claim({ claimRef: 'long-watched' });
      await eventually(
        () => watch.events().some((e) => e.type === 'ADDED' && e.object.metadata?.name === 'long-watched'),
        { what: () => `ADDED long-watched on the watch (ended: ${watch.ended})` },
      );
      expect(watch.ended).toBe(false);
      expect(warnings).not.toContain('TimeoutOverflowWarning');
    } finally {
      watch.close();
      process.off('warning', onWarning);
    }
  });

  it('keeps no Sandbox in etcd: only the pools, templates and one NodeInventory per node', async () => {
    expect((await getJson(['get', 'sandboxes', '-A'])).items?.length ?? 0).toBeGreaterThan(3);
    expect(await etcdKeyCount(cluster, '/registry/agents.x-k8s.io/')).toBe(0);
    expect(await etcdKeyCount(cluster, '/registry/warmpool.dev/nodeinventories/')).toBe(fleet.nodes.length);
  });

  it("a replica started after the claim events are gone serves the same sandboxes, from the nodes' entries and the claim index", async () => {
    // As if it started more than the stream's window after these claims.
    const admin = new Redis(redis.url);
    await admin.xtrim(new ClaimIndex(admin).eventsKey, 'MAXLEN', 0);
    admin.disconnect();
    const later = await startControlPlane(cluster, dir, 'default', {
      token: TOKEN,
      claims: { redis: { url: redis.url } },
      sandboxApi: {
        listen: { host: '127.0.0.1', port: 0 },
        tls: { certFile: join(dir, 'serving.crt'), keyFile: join(dir, 'serving.key') },
      },
    });
    try {
      await eventually(() => later.notReadyReasons().length === 0, { what: 'the later replica ready' });
      const laterPort = Number(new URL(later.sandboxApiUrl ?? 'https://x:0').port);
      const names = (sandboxes: readonly Sandbox[]): string[] =>
        sandboxes.map((s) => `${s.metadata.name}@${s.status?.nodeName ?? ''}`).sort();
      await eventually(
        async () =>
          JSON.stringify(names(await sandboxesServedBy(laterPort))) ===
          JSON.stringify(names(await sandboxesServedBy(port))),
        { what: 'the same sandboxes in both replicas' },
      );
      expect(names(await sandboxesServedBy(laterPort)).length).toBeGreaterThan(3);
      // The owner address and tier, which a node's entry does not carry, come from the claim index: the later
      // replica finds them for every sandbox the first one knows them of (a sandbox released meanwhile, still on its
      // node's entries until the next publish, has no record left to find).
      await eventually(
        async () => {
          const later = new Map((await sandboxesServedBy(laterPort)).map((s) => [s.metadata.name, s.status]));
          const known = (await sandboxesServedBy(port)).filter((s) => s.status?.ownerAddr && s.status.tier);
          return (
            known.length > 3 &&
            known.every(
              (s) =>
                later.get(s.metadata.name)?.ownerAddr === s.status?.ownerAddr &&
                later.get(s.metadata.name)?.tier === s.status?.tier,
            )
          );
        },
        { what: 'owner addresses and tiers looked up' },
      );
    } finally {
      await later.close();
    }
  });

  it('answers get and list -A within the timeout while a node is frozen (SIGSTOP)', async () => {
    const claimed = await claim({ claimRef: 'on-frozen-node' });
    const node = fleet.nodes.find((n) => n.name === claimed.node);
    const pid = node?.agent?.pid;
    expect(pid).toBeDefined();
    process.kill(pid ?? 0, 'SIGSTOP');
    try {
      const started = performance.now();
      const list = await cluster.kubectl(['get', 'sandboxes', '-A', '--request-timeout=10s']);
      const got = await cluster.kubectl([
        'get',
        'sandbox',
        'on-frozen-node',
        '-n',
        ns,
        '--request-timeout=10s',
        '-o',
        'json',
      ]);
      expect(list.code, list.stderr).toBe(0);
      expect(list.stdout).toContain('on-frozen-node');
      expect(got.code, got.stderr).toBe(0);
      expect((JSON.parse(got.stdout) as Sandbox).status?.nodeName).toBe(claimed.node);
      expect(performance.now() - started).toBeLessThan(20_000);
    } finally {
      process.kill(pid ?? 0, 'SIGCONT');
    }
  });
});
