// The HTTP claim API end to end (docs/claim-api.md): a real
// kube-apiserver (TokenReview, SubjectAccessReview, RBAC), a real Redis, three
// real node agents each in front of a fake-sandboxd, and two control-plane
// replicas in this process sharing that Redis. What the nodes hold is read
// straight from each fake-sandboxd.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { claimBodySchema, claimErrorBodySchema, parseNodeClaimRef, type ClaimBody } from '@warmpool/api';
import { eventually, template, warmPool, type TestCluster } from '@warmpool/harness';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlane } from '../../src/options.js';
import { callClaims, claimsOnNodes, serviceAccountToken } from '../support/claims.js';
import type { Fleet } from '../support/fleet.js';
import { apply, kubectl } from '../support/objects.js';
import { testWorld, type TestWorld } from '../support/world.js';
import { claimsReady } from '../support/metrics.js';

const TOKEN = 'fleet-token-for-claim-tests';
const IMAGE = 'registry.test/claims:1';

describe('the HTTP claim API (real apiserver, Redis, agents and fake-sandboxd; two replicas)', () => {
  let world: TestWorld;
  let cluster: TestCluster;
  let fleet: Fleet;
  let ns: string;
  let a: ControlPlane;
  let b: ControlPlane;
  let allowed: string;
  let forbidden: string;
  let readOnly: string;

  const urlOf = (cp: ControlPlane): string => cp.claimsUrl ?? '';
  const claimsPath = (namespace = ns): string => `/v1/namespaces/${namespace}/claims`;
  /** Whether a node's claim_ref names the HTTP claim `claimRef` of this spec's namespace. */
  const named = (nodeRef: string | undefined, claimRef: string): boolean => {
    const owner = parseNodeClaimRef(nodeRef);
    return owner?.door === 'http' && owner.namespace === ns && owner.claimRef === claimRef;
  };
  const nodeClaims = async (): Promise<Array<{ node: string; claimRef: string | undefined; id: string }>> =>
    claimsOnNodes(fleet, TOKEN);

  async function replica(): Promise<ControlPlane> {
    return world.controlPlane('default', { claims: world.claimsOptions({ settings: { claimTimeoutMs: 10_000 } }) });
  }

  beforeAll(async () => {
    world = await testWorld({ name: 'cp-claims', token: TOKEN, redis: true, fleet: { count: 3, capacity: 30 } });
    ({ cluster, fleet } = world);
    ns = await world.namespace('claims');
    [allowed, forbidden, readOnly] = await Promise.all([
      serviceAccountToken(cluster, ns, 'claimer', ['create', 'get', 'update', 'delete']),
      serviceAccountToken(cluster, ns, 'stranger', undefined),
      serviceAccountToken(cluster, ns, 'reader', ['get']),
    ]);
    await apply(
      cluster,
      template(ns, 'tpl', IMAGE),
      warmPool(ns, 'python', 'tpl', 6),
      template(ns, 'upstream', 'registry.test/upstream:1', { optIn: false }),
      warmPool(ns, 'not-ours', 'upstream', 1),
    );
    a = await replica();
    b = await replica();
    await eventually(() => a.isLeader() || b.isLeader(), { what: 'a leader' });
    await eventually(async () => (await fleet.warmOf(`${IMAGE}|none|small`)).every((w) => w === 2), {
      what: '2 warm on every node',
      timeoutMs: 30_000,
    });
    // Placement reads the warm counts the nodes publish (or the leader's fresher view): wait until they show the fill.
    await eventually(
      async () => {
        const inventories = JSON.parse(await kubectl(cluster, ['get', 'nodeinventories', '-o', 'json'])) as {
          items: Array<{ status?: { pools?: Array<{ template: string; warm: number }> } }>;
        };
        return (
          inventories.items.length === 3 &&
          inventories.items.every((i) => (i.status?.pools ?? []).some((p) => p.template === IMAGE && p.warm >= 2))
        );
      },
      { what: 'the inventories to show 2 warm on every node', timeoutMs: 30_000 },
    );
    await eventually(async () => (await claimsReady(a)) && (await claimsReady(b)), {
      what: 'both replicas ready to claim',
    });
  });

  afterAll(() => world?.close());

  describe('authentication and authorization', () => {
    it('answers 401 Unauthenticated without a token, or with one the apiserver does not know', async () => {
      for (const token of [undefined, 'not-a-real-token']) {
        const answer = await callClaims(urlOf(a), 'POST', claimsPath(), token, { warmPool: 'python' });
        expect(answer.status).toBe(401);
        expect(claimErrorBodySchema.parse(answer.body).reason).toBe('Unauthenticated');
      }
    });

    it('answers 403 Forbidden to a ServiceAccount without the RBAC, and claims nothing', async () => {
      const before = (await nodeClaims()).length;
      const answer = await callClaims(urlOf(a), 'POST', claimsPath(), forbidden, { warmPool: 'python' });
      expect(answer.status).toBe(403);
      expect(claimErrorBodySchema.parse(answer.body)).toMatchObject({
        reason: 'Forbidden',
        error: expect.stringContaining(`system:serviceaccount:${ns}:stranger`),
      });
      expect((await nodeClaims()).length).toBe(before);
    });

    it('checks the verb: a ServiceAccount that may only get cannot claim, nor claim in another namespace', async () => {
      expect((await callClaims(urlOf(a), 'POST', claimsPath(), readOnly, { warmPool: 'python' })).status).toBe(403);
      expect((await callClaims(urlOf(a), 'POST', claimsPath('default'), allowed, { warmPool: 'python' })).status).toBe(
        403,
      );
    });
  });

  describe('its OpenAPI document and methods', () => {
    interface Document {
      openapi: string;
      info: { version: string };
      paths: Record<string, Record<string, { security?: unknown[]; responses: Record<string, unknown> }>>;
      components: {
        schemas: Record<
          string,
          { required?: string[]; properties?: Record<string, { enum?: string[]; maximum?: number }> }
        >;
      };
    }

    it('serves /openapi.json without a token, generated from the zod schemas of libs/api, one operation per served route', async () => {
      const answer = await callClaims<Document>(urlOf(a), 'GET', '/openapi.json', undefined);
      expect(answer.status).toBe(200);
      const doc = answer.body;
      expect(doc.openapi).toBe('3.1.0');
      expect(doc.info.version).toMatch(/^\d+\.\d+\.\d+/);
      const routes = Object.entries(doc.paths)
        .flatMap(([path, ops]) => Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`))
        .sort();
      expect(routes).toEqual([
        'DELETE /v1/namespaces/{namespace}/claims/{id}',
        'GET /openapi.json',
        'GET /v1/namespaces/{namespace}/claims/{id}',
        'POST /v1/namespaces/{namespace}/claims',
        'POST /v1/namespaces/{namespace}/claims/{id}/renew',
      ]);
      for (const [path, ops] of Object.entries(doc.paths)) {
        for (const operation of Object.values(ops))
          if (path.startsWith('/v1/'))
            expect(Object.keys(operation.responses), path).toEqual(expect.arrayContaining(['401', '403', '405']));
      }
      const { schemas } = doc.components;
      expect(schemas['CreateClaimRequest']?.properties?.['ttlSeconds']).toMatchObject({ maximum: 86_400 });
      expect(schemas['Claim']?.required).toEqual(
        expect.arrayContaining(['id', 'deadline', 'node', 'claimRef', 'tier']),
      );
      expect(schemas['Error']?.properties?.['reason']?.enum).toEqual(
        expect.arrayContaining(['NoCapacity', 'MethodNotAllowed']),
      );
    });

    it('answers a wrong method on a served path 405 MethodNotAllowed with Allow, an unknown path 404 NotFound, and neither without a token', async () => {
      const cases: Array<[string, string, string]> = [
        ['PUT', claimsPath(), 'POST'],
        ['GET', claimsPath(), 'POST'],
        ['POST', `${claimsPath()}/job-1`, 'DELETE, GET, HEAD'],
        ['GET', `${claimsPath()}/job-1/renew`, 'POST'],
        ['POST', '/openapi.json', 'GET, HEAD'],
      ];
      for (const [method, path, allow] of cases) {
        const answer = await callClaims(urlOf(a), method, path, allowed);
        expect(answer.status, `${method} ${path}`).toBe(405);
        expect(answer.headers.get('allow')).toBe(allow);
        expect(claimErrorBodySchema.parse(answer.body).reason).toBe('MethodNotAllowed');
      }
      const unknown = await callClaims(urlOf(a), 'GET', '/v2/claims', allowed);
      expect(unknown.status).toBe(404);
      expect(claimErrorBodySchema.parse(unknown.body).reason).toBe('NotFound');
      // Authentication comes first: a caller without a token learns nothing about the routes.
      expect((await callClaims(urlOf(a), 'PUT', claimsPath(), undefined)).status).toBe(401);
    });
  });

  describe('claiming', () => {
    it('answers 200 with a sandbox for a ServiceAccount with the RBAC; its node holds it under http:<namespace>/<claimRef>/<pool>/<owner>', async () => {
      const answer = await callClaims(urlOf(a), 'POST', claimsPath(), allowed, { warmPool: 'python', ttlSeconds: 120 });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      const claim = claimBodySchema.parse(answer.body);
      expect(claim).toMatchObject({ namespace: ns, warmPool: 'python', tier: 'warm', token: expect.any(String) });
      expect(fleet.nodes.map((n) => n.name)).toContain(claim.node);
      expect(Date.parse(claim.deadline) - Date.now()).toBeGreaterThan(100_000);
      const held = (await nodeClaims()).filter((c) => named(c.claimRef, claim.claimRef));
      expect(held).toEqual([{ node: claim.node, claimRef: expect.any(String), id: claim.id }]);
      expect(parseNodeClaimRef(held[0]?.claimRef)).toMatchObject({
        door: 'http',
        namespace: ns,
        claimRef: claim.claimRef,
        pool: 'python',
      });
    });

    it('answers the same sandbox to the same claimRef, through either replica, and the node holds one', async () => {
      const first = await callClaims(urlOf(a), 'POST', claimsPath(), allowed, {
        warmPool: 'python',
        claimRef: 'job-42',
      });
      const again = await callClaims(urlOf(b), 'POST', claimsPath(), allowed, {
        warmPool: 'python',
        claimRef: 'job-42',
      });
      const concurrent = await Promise.all(
        [1, 2, 3].map(() =>
          callClaims(urlOf(a), 'POST', claimsPath(), allowed, { warmPool: 'python', claimRef: 'job-43' }),
        ),
      );
      expect(first.status).toBe(200);
      expect(again.status).toBe(200);
      expect(claimBodySchema.parse(again.body).id).toBe(claimBodySchema.parse(first.body).id);
      expect(new Set(concurrent.map((c) => claimBodySchema.parse(c.body).id)).size).toBe(1);
      const held = await nodeClaims();
      expect(held.filter((c) => named(c.claimRef, 'job-42'))).toHaveLength(1);
      expect(held.filter((c) => named(c.claimRef, 'job-43'))).toHaveLength(1);
    });

    it('gives concurrent claims distinct sandboxes, spread over the nodes', async () => {
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => callClaims(urlOf(a), 'POST', claimsPath(), allowed, { warmPool: 'python' })),
      );
      expect(answers.map((x) => x.status)).toEqual(Array(20).fill(200));
      const claims = answers.map((x) => claimBodySchema.parse(x.body));
      expect(new Set(claims.map((c) => c.id)).size).toBe(20);
      expect(new Set(claims.map((c) => c.node)).size).toBeGreaterThan(1);
      for (const c of claims)
        expect((await callClaims(urlOf(b), 'DELETE', `${claimsPath()}/${c.id}`, allowed)).status).toBe(204);
    });

    it('boots cold when the pool has no warm sandbox left, on a node with room', async () => {
      await apply(cluster, template(ns, 'cold-tpl', 'registry.test/cold:1'), warmPool(ns, 'cold', 'cold-tpl', 0));
      const answer = await eventually(
        async () => {
          const x = await callClaims(urlOf(a), 'POST', claimsPath(), allowed, { warmPool: 'cold' });
          return x.status === 200 ? x : undefined;
        },
        { what: 'a cold claim' },
      );
      expect(claimBodySchema.parse(answer.body).tier).toBe('cold');
    });
  });

  describe('from a replica other than the one that served', () => {
    let claim: ClaimBody;
    beforeAll(async () => {
      const answer = await callClaims(urlOf(a), 'POST', claimsPath(), allowed, {
        warmPool: 'python',
        claimRef: 'cross-replica',
        ttlSeconds: 60,
      });
      claim = claimBodySchema.parse(answer.body);
    });

    it('reads the claim, without its token, by id and by claimRef', async () => {
      for (const id of [claim.id, 'cross-replica']) {
        const answer = await callClaims(urlOf(b), 'GET', `${claimsPath()}/${id}`, allowed);
        expect(answer.status).toBe(200);
        const { token: _token, ...rest } = claim;
        expect(answer.body).toEqual(rest);
      }
    });

    it('renews it: the node holds the new deadline', async () => {
      const answer = await callClaims(urlOf(b), 'POST', `${claimsPath()}/${claim.id}/renew`, allowed, {
        ttlSeconds: 3_600,
      });
      expect(answer.status).toBe(200);
      const deadline = (answer.body as { deadline: string }).deadline;
      expect(Date.parse(deadline) - Date.now()).toBeGreaterThan(3_500_000);
      const node = fleet.nodes.find((n) => n.name === claim.node);
      const row = (await (
        await fetch(`${node?.sandboxdUrl}/v1/sandboxes/${claim.id}`, { headers: { authorization: `Bearer ${TOKEN}` } })
      ).json()) as { deadline: string };
      expect(row.deadline).toBe(deadline);
      expect((await callClaims(urlOf(a), 'GET', `${claimsPath()}/${claim.id}`, allowed)).body).toMatchObject({
        deadline,
      });
    });

    it('releases it: 204, the node no longer holds it, then 404 ClaimNotFound', async () => {
      expect((await callClaims(urlOf(b), 'DELETE', `${claimsPath()}/${claim.id}`, allowed)).status).toBe(204);
      expect((await nodeClaims()).some((c) => c.id === claim.id)).toBe(false);
      for (const [method, path] of [
        ['GET', claim.id],
        ['DELETE', claim.id],
        ['POST', `${claim.id}/renew`],
      ] as const) {
        const answer = await callClaims(
          urlOf(a),
          method,
          `${claimsPath()}/${path}`,
          allowed,
          method === 'POST' ? {} : undefined,
        );
        expect(answer.status).toBe(404);
        expect(claimErrorBodySchema.parse(answer.body).reason).toBe('ClaimNotFound');
      }
    });
  });

  describe('refusals change nothing', () => {
    it.each([
      ['not JSON', '{"warmPool":'],
      ['no warmPool', {}],
      ['an unknown field', { warmPool: 'python', replicas: 3 }],
      ['a ttl over a day', { warmPool: 'python', ttlSeconds: 86_401 }],
      ['a zero ttl', { warmPool: 'python', ttlSeconds: 0 }],
      ['a claimRef that is not a DNS label', { warmPool: 'python', claimRef: 'Job_42' }],
      ['an array', []],
    ])('answers 400 BadRequest to %s', async (_case, body) => {
      const before = await nodeClaims();
      const answer = await callClaims(urlOf(a), 'POST', claimsPath(), allowed, body);
      expect(answer.status).toBe(400);
      expect(claimErrorBodySchema.parse(answer.body).reason).toBe('BadRequest');
      expect(await nodeClaims()).toEqual(before);
    });

    it('answers 404 PoolNotFound for a missing pool and NotDriven for a pool warmpool does not drive', async () => {
      const missing = await callClaims(urlOf(a), 'POST', claimsPath(), allowed, { warmPool: 'nope' });
      expect(missing.status).toBe(404);
      expect(claimErrorBodySchema.parse(missing.body).reason).toBe('PoolNotFound');
      const undriven = await callClaims(urlOf(a), 'POST', claimsPath(), allowed, { warmPool: 'not-ours' });
      expect(undriven.status).toBe(404);
      expect(claimErrorBodySchema.parse(undriven.body).reason).toBe('NotDriven');
    });

    it('answers 429 NoCapacity with Retry-After when no node has room, and claims again once there is', async () => {
      const drain = (method: string): Promise<unknown> =>
        Promise.all(
          fleet.nodes.map(async (n) =>
            (
              await fetch(`${n.sandboxdUrl}/v1/drain`, { method, headers: { authorization: `Bearer ${TOKEN}` } })
            ).body?.cancel(),
          ),
        );
      await drain('POST');
      try {
        const before = await nodeClaims();
        const answer = await callClaims(urlOf(a), 'POST', claimsPath(), allowed, { warmPool: 'python' });
        expect(answer.status).toBe(429);
        expect(claimErrorBodySchema.parse(answer.body).reason).toBe('NoCapacity');
        expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(await nodeClaims()).toEqual(before);
      } finally {
        await drain('DELETE');
      }
      await eventually(
        async () => (await callClaims(urlOf(a), 'POST', claimsPath(), allowed, { warmPool: 'python' })).status === 200,
        { what: 'claims to work again' },
      );
    });
  });

  describe('when Redis goes away', () => {
    it('answers 503 Unavailable meanwhile, and claims again once it is back', async () => {
      await world.redis.stop();
      const answer = await eventually(
        async () => {
          const x = await callClaims(urlOf(a), 'POST', claimsPath(), allowed, { warmPool: 'python' });
          return x.status === 503 ? x : undefined;
        },
        { what: '503 while Redis is down' },
      );
      expect(claimErrorBodySchema.parse(answer.body).reason).toBe('Unavailable');
      expect(answer.headers.get('retry-after')).not.toBeNull();
      expect(a.ready()).toBe(true); // the driver is unaffected: /readyz stays ready
      // A replica that starts while Redis is away serves the API (503) and claims once Redis is back.
      const late = await replica();
      try {
        const early = await callClaims(urlOf(late), 'POST', claimsPath(), allowed, { warmPool: 'python' });
        expect(early.status).toBe(503);
        expect(claimErrorBodySchema.parse(early.body)).toMatchObject({
          reason: 'Unavailable',
          error: expect.stringContaining('Redis'),
        });
        await world.startRedisAgain();
        for (const cp of [a, b, late]) {
          await eventually(
            async () =>
              (await callClaims(urlOf(cp), 'POST', claimsPath(), allowed, { warmPool: 'python' })).status === 200,
            { what: 'claims to work again', timeoutMs: 30_000 },
          );
        }
      } finally {
        await late.close();
      }
    });
  });

  it('serves the claim API over TLS when given a certificate and key', async () => {
    const certFile = join(world.dir, 'claims-serving.crt');
    const keyFile = join(world.dir, 'claims-serving.key');
    writeFileSync(certFile, cluster.pki.serving.certPem);
    writeFileSync(keyFile, cluster.pki.serving.keyPem, { mode: 0o600 });
    const secure = await world.controlPlane('default', { claims: world.claimsOptions({ tls: { certFile, keyFile } }) });
    const dispatcher = new Agent({ connect: { ca: cluster.pki.ca.certPem } });
    try {
      expect(secure.claimsUrl).toMatch(/^https:\/\//);
      await eventually(() => claimsReady(secure), { what: 'the TLS replica ready to claim' });
      const res = await undiciFetch(`${secure.claimsUrl}${claimsPath()}`, {
        method: 'POST',
        dispatcher,
        headers: { authorization: `Bearer ${allowed}`, 'content-type': 'application/json' },
        body: JSON.stringify({ warmPool: 'python' }),
      });
      expect(res.status).toBe(200);
      expect(claimBodySchema.parse(await res.json()).namespace).toBe(ns);
    } finally {
      await dispatcher.close();
      await secure.close();
    }
  });

  it('writes nothing to the apiserver per claim (no SandboxClaim, no Sandbox objects)', async () => {
    expect((await kubectl(cluster, ['get', 'sandboxclaims,sandboxes', '-A', '--no-headers'])).trim()).toBe('');
  });
});
