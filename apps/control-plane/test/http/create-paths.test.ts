// The create route has two paths on a served claim API: the exact path is
// answered on Node's own objects ahead of Hono (direct-create.ts), anything
// else (a query string, a percent-encoded namespace) by the Hono app. Every
// create case must answer the same on both: status, the headers a client
// reads, and body. The reviewer and the pipeline are stand-ins here (their
// real selves are claims-http.test.ts's); what is checked is the HTTP layer,
// including that both paths hand the request's connection to the access check
// (a repeated header is not hashed again for its TokenReview key).
import { ReviewUnavailable, type AccessReviewer, type TokenKey, type UserInfo } from '@warmpool/kube';
import { silentLogger } from '@warmpool/runtime';
import { Agent, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClaimApi, type ClaimApi } from '../../src/http/claims/app.js';
import { ClaimApiServer } from '../../src/http/claims/server.js';
import {
  ClaimFailure,
  type ClaimCallOptions,
  type ClaimOrder,
  type ClaimService,
  type ServedGrant,
} from '../../src/provisioning/claim-service.js';
import type { CallerGone } from '../../src/provisioning/caller-signal.js';
import { callClaims, type Answer } from '../support/claims.js';

const USERS: Record<string, UserInfo | 'down' | 'odd'> = {
  'alice-token': { username: 'alice' },
  'bob-token': { username: 'bob' },
  'down-token': 'down',
  'odd-token': 'odd',
};

/** Every token the reviewer's key was computed for (the hash a keep-alive connection spares), in order. */
const keyed: string[] = [];
const keyOf = (token: string): TokenKey => `k:${token}` as TokenKey;

/**
 * Alice may create in any namespace, Bob nowhere; `down-token` finds the apiserver unreachable. A key handed in must
 * be the token's (else the request fails, 503).
 */
const reviewer: AccessReviewer = {
  tokenKey(token) {
    keyed.push(token);
    return keyOf(token);
  },
  authenticate(token, key) {
    if (key !== undefined && key !== keyOf(token)) return Promise.reject(new Error(`${key} is not ${token}'s key`));
    const user = USERS[token];
    if (user === 'down') return Promise.reject(new ReviewUnavailable('the apiserver could not review the request'));
    // Something that is not an Error, as a buggy dependency may reject with.
    if (user === 'odd') return Promise.reject('not an Error');
    return Promise.resolve(user);
  },
  authorize: (user) => Promise.resolve(user.username === 'alice'),
};

/** The pipeline's stand-in: each claim does what its pool's name says, and is remembered. */
class Pipeline implements ClaimService {
  readonly orders: Array<{ order: ClaimOrder; givenUp: CallerGone | undefined; heardGone: boolean }> = [];

  async claim(order: ClaimOrder, options?: ClaimCallOptions): Promise<ServedGrant> {
    const seen = { order, givenUp: options?.givenUp, heardGone: false };
    options?.givenUp?.onGone(() => (seen.heardGone = true));
    this.orders.push(seen);
    switch (order.warmPool) {
      case 'full':
        throw new ClaimFailure('NoCapacity', 'no node has room', { retryAfterSeconds: 2 });
      case 'broken':
        throw new Error('a bug');
      case 'odd':
        throw undefined;
      case 'slow':
        await new Promise((resolve) => setTimeout(resolve, 300));
    }
    return {
      id: `sb_${this.orders.length}`,
      token: 'sandbox-token',
      deadline: '2026-12-02T17:00:00.000Z',
      ownerAddr: '10.0.0.7:9090',
      node: 'node-1',
      namespace: order.namespace,
      warmPool: order.warmPool,
      claimRef: order.claimRef,
      tier: 'warm',
      door: 'http',
      owner: order.owner.door === 'http' ? order.owner.digest : '',
      fresh: true,
    };
  }

  lookup(): Promise<undefined> {
    return Promise.resolve(undefined);
  }
  renew(): Promise<{ deadline: string }> {
    return Promise.reject(new ClaimFailure('ClaimNotFound', 'no such claim'));
  }
  release(): Promise<boolean> {
    return Promise.resolve(false);
  }
  notReadyReasons(): string[] {
    return [];
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** Both paths of one create: the exact path (direct) and the same with a query string (Hono). */
const PATHS = {
  direct: (ns: string) => `/v1/namespaces/${ns}/claims`,
  app: (ns: string) => `/v1/namespaces/${ns}/claims?via=app`,
};

describe('the create route, ahead of Hono and through it', () => {
  const pipeline = new Pipeline();
  const taken: string[] = [];
  let api: ClaimApi;
  let server: ClaimApiServer;
  let url: string;

  beforeAll(async () => {
    api = createClaimApi({
      claims: pipeline,
      reviewer,
      logger: silentLogger,
      peers: { authenticate: (token) => (token === 'peer-token' ? 'cluster-b' : undefined) },
    });
    // Counts the requests the direct path takes, so the spec knows each path is the one it means.
    const { ahead } = api;
    api.ahead = (incoming, outgoing) => {
      const took = ahead(incoming, outgoing);
      if (took) taken.push(incoming.url ?? '');
      return took;
    };
    server = new ClaimApiServer(api, { host: '127.0.0.1', port: 0 }, undefined);
    await server.start();
    url = server.url ?? '';
  });

  afterAll(async () => {
    await server.close();
  });

  /** What a client reads of an answer (a served claim's own id and generated claimRef differ from call to call). */
  const seen = ({ status, body, headers }: Answer): unknown => ({
    status,
    body: status === 200 ? { ...(body as object), id: 'sb_…', claimRef: 'c-…' } : body,
    contentType: headers.get('content-type'),
    retryAfter: headers.get('retry-after'),
    authenticate: headers.get('www-authenticate'),
  });

  async function onBothPaths(ns: string, token: string | undefined, body?: unknown): Promise<Record<string, unknown>> {
    const takenBefore = taken.length;
    const direct = seen(await callClaims(url, 'POST', PATHS.direct(ns), token, body));
    const app = seen(await callClaims(url, 'POST', PATHS.app(ns), token, body));
    expect(taken.slice(takenBefore), 'the exact path, and only it, is served ahead of the app').toStrictEqual([
      PATHS.direct(ns),
    ]);
    expect(direct, 'the direct path answers as the app does').toStrictEqual(app);
    return direct as Record<string, unknown>;
  }

  it('serves a claim: 200 with the sandbox and its token, the owner digest, a generated claimRef', async () => {
    const before = pipeline.orders.length;
    const answer = await onBothPaths('team-a', 'alice-token', { warmPool: 'python', ttlSeconds: 60 });
    expect(answer).toMatchObject({ status: 200, contentType: 'application/json' });
    expect(answer['body']).toMatchObject({ token: 'sandbox-token', namespace: 'team-a', warmPool: 'python' });
    const orders = pipeline.orders.slice(before).map(({ order }) => order);
    expect(orders).toHaveLength(2);
    for (const order of orders) {
      expect(order).toMatchObject({ namespace: 'team-a', ttlSeconds: 60, claimRefGenerated: true });
      expect(order.claimRef).toMatch(/^c-[0-9a-f]{24}$/);
      expect(order.owner).toStrictEqual(orders[0]?.owner);
    }
  });

  it('refuses a caller before reading the body: 401 with WWW-Authenticate, 403, and 503 when the apiserver cannot review', async () => {
    const before = pipeline.orders.length;
    expect(await onBothPaths('team-a', undefined, { warmPool: 'python' })).toMatchObject({
      status: 401,
      authenticate: 'Bearer',
      body: { reason: 'Unauthenticated' },
    });
    expect(await onBothPaths('team-a', 'nobody-token', { warmPool: 'python' })).toMatchObject({
      status: 401,
      body: { reason: 'Unauthenticated', error: 'the token is not valid' },
    });
    expect(await onBothPaths('team-a', 'bob-token', { warmPool: 'python' })).toMatchObject({
      status: 403,
      body: {
        reason: 'Forbidden',
        error: 'bob may not create sandboxclaims.extensions.agents.x-k8s.io in namespace team-a',
      },
    });
    expect(await onBothPaths('team-a', 'down-token', { warmPool: 'python' })).toMatchObject({
      status: 503,
      retryAfter: '1',
      body: { reason: 'Unavailable' },
    });
    expect(await onBothPaths('Team_A', 'alice-token', { warmPool: 'python' })).toMatchObject({
      status: 400,
      body: { reason: 'BadRequest', error: 'the namespace in the path is not a valid namespace name' },
    });
    expect(pipeline.orders.length).toBe(before);
  });

  it('refuses a bad body 400 in the same words: not JSON, too large, a field zod refuses, a rule of the route', async () => {
    const before = pipeline.orders.length;
    expect(await onBothPaths('team-a', 'alice-token', '{"warmPool":')).toMatchObject({
      status: 400,
      body: { reason: 'BadRequest', error: 'the body is not a JSON object of the documented fields' },
    });
    expect(await onBothPaths('team-a', 'alice-token', { warmPool: 'p', pad: 'x'.repeat(70_000) })).toMatchObject({
      status: 400,
      body: { reason: 'BadRequest' },
    });
    const refused = await onBothPaths('team-a', 'alice-token', { warmPool: 'python', claimRef: 'Not_A_Label' });
    expect(refused).toMatchObject({ status: 400, body: { reason: 'BadRequest' } });
    expect((refused['body'] as { error: string }).error).toMatch(/must be a DNS label/);
    expect(await onBothPaths('team-a', 'alice-token', { env: 'e', target: 'b::p' })).toMatchObject({
      status: 403,
      body: { reason: 'Forbidden', error: 'target is only for peer clusters presenting their peer token' },
    });
    expect(await onBothPaths('team-a', 'peer-token', { warmPool: 'python' })).toMatchObject({
      status: 403,
      body: { error: 'a peer cluster may only create claims pinned to a member pool (target)' },
    });
    expect(await onBothPaths('team-a', 'alice-token', { env: 'e' })).toMatchObject({
      status: 400,
      body: { error: 'claims for a SandboxEnv need the claim pipeline with SandboxEnvs (not configured here)' },
    });
    expect(pipeline.orders.length).toBe(before);
  });

  it("answers the pipeline's failures as the app does: 429 with Retry-After, and 503 without a bug's details", async () => {
    expect(await onBothPaths('team-a', 'alice-token', { warmPool: 'full' })).toStrictEqual({
      status: 429,
      contentType: 'application/json',
      retryAfter: '2',
      authenticate: null,
      body: { reason: 'NoCapacity', error: 'no node has room' },
    });
    expect(await onBothPaths('team-a', 'alice-token', { warmPool: 'broken' })).toMatchObject({
      status: 503,
      retryAfter: '1',
      body: { reason: 'Unavailable', error: 'internal error' },
    });
  });

  it('answers something thrown that is not an Error as the app does: 503 without its details', async () => {
    const unexpected = { status: 503, retryAfter: '1', body: { reason: 'Unavailable', error: 'internal error' } };
    expect(await onBothPaths('team-a', 'alice-token', { warmPool: 'odd' })).toMatchObject(unexpected);
    expect(await onBothPaths('team-a', 'odd-token', { warmPool: 'python' })).toMatchObject(unexpected);
  });

  it('leaves a percent-encoded namespace to the app, which decodes it', async () => {
    const answer = await callClaims(url, 'POST', '/v1/namespaces/team%2Da/claims', 'alice-token', {
      warmPool: 'python',
    });
    expect(answer).toMatchObject({ status: 200, body: { namespace: 'team-a' } });
    expect(taken).not.toContain('/v1/namespaces/team%2Da/claims');
  });

  it('leaves to the app a path its URL parser rewrites: an empty, `.` or `..` segment, a backslash', async () => {
    /** The status of a POST sent with the path as written (fetch would normalize it first). */
    const statusOf = (path: string): Promise<number | undefined> =>
      new Promise((resolve, reject) => {
        const { hostname, port } = new URL(url);
        const headers = { authorization: 'Bearer alice-token' };
        const sent = request({ host: hostname, port, path, method: 'POST', headers });
        sent.on('response', (answer) => {
          answer.resume();
          resolve(answer.statusCode);
        });
        sent.on('error', reject);
        sent.end(JSON.stringify({ warmPool: 'python' }));
      });
    const rewritten = {
      '/v1/namespaces//claims': 404,
      '/v1/namespaces/./claims': 404,
      '/v1/namespaces/../claims': 404,
      '/v1/namespaces/x\\..\\team-a/claims': undefined,
    };
    for (const [path, status] of Object.entries(rewritten)) {
      const answered = await statusOf(path);
      expect(taken, path).not.toContain(path);
      if (status !== undefined) expect(answered, path).toBe(status);
    }
  });

  it("keys a keep-alive connection's header once, on both paths and the app's other routes", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const ports = new Set<number | undefined>();
    /** The status of `method path` sent on `agent`'s one connection with `token`. */
    const on = (method: string, path: string, token: string): Promise<number | undefined> =>
      new Promise((resolve, reject) => {
        const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
        const sent = request(`${url}${path}`, { method, agent, headers }, (answer) => {
          answer.resume();
          answer.on('end', () => {
            ports.add(sent.socket?.localPort);
            resolve(answer.statusCode);
          });
        });
        sent.on('error', reject);
        sent.end(method === 'POST' ? JSON.stringify({ warmPool: 'python' }) : undefined);
      });
    try {
      const before = keyed.length;
      const statuses = [
        await on('POST', PATHS.direct('team-a'), 'alice-token'),
        await on('POST', PATHS.app('team-a'), 'alice-token'),
        await on('GET', '/v1/namespaces/team-a/claims/sb_none', 'alice-token'),
        await on('POST', PATHS.direct('team-a'), 'alice-token'),
        await on('POST', PATHS.direct('team-a'), 'bob-token'),
        await on('POST', PATHS.app('team-a'), 'bob-token'),
        await on('POST', PATHS.direct('team-a'), 'nobody-token'),
        await on('POST', PATHS.app('team-a'), 'nobody-token'),
        await on('POST', PATHS.app('team-a'), 'alice-token'),
      ];
      expect(statuses).toStrictEqual([200, 200, 404, 200, 403, 403, 401, 401, 200]);
      expect(ports.size, 'all on one connection').toBe(1);
      expect(keyed.slice(before), 'each change of header hashed, a repeated one not').toStrictEqual([
        'alice-token',
        'bob-token',
        'nobody-token',
        'alice-token',
      ]);
      // Without a connection (app.request()), every request is hashed.
      const init = { method: 'GET', headers: { authorization: 'Bearer alice-token' } };
      expect((await api.app.request('/v1/namespaces/team-a/claims/sb_none', init)).status).toBe(404);
      expect((await api.app.request('/v1/namespaces/team-a/claims/sb_none', init)).status).toBe(404);
      expect(keyed.length - before).toBe(6);
    } finally {
      agent.destroy();
    }
  });

  it('tells the pipeline when the caller gives up, on both paths', async () => {
    for (const path of Object.values(PATHS)) {
      const before = pipeline.orders.length;
      const aborted = new AbortController();
      const call = fetch(`${url}${path('team-a')}`, {
        method: 'POST',
        headers: { authorization: 'Bearer alice-token', 'content-type': 'application/json' },
        body: JSON.stringify({ warmPool: 'slow' }),
        signal: aborted.signal,
      }).catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 100));
      aborted.abort();
      await call;
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(pipeline.orders[before]?.givenUp?.gone).toBe(true);
      expect(pipeline.orders[before]?.heardGone).toBe(true);
    }
  });
});
