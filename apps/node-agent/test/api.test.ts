// The agent's API over real HTTP, in front of a real fake-sandboxd. No
// inventory here (see inventory.test.ts): readiness needs only sandboxd.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:http';
import { createAdaptorServer } from '@hono/node-server';
import {
  agentErrorBodySchema,
  type ClaimResponse,
  type NodeInfo,
  type SandboxList,
  type SandboxRow,
} from '@warmpool/api';
import { createSandboxdApp, FakeSandboxd, startFakeSandboxd } from '@warmpool/fake-sandboxd';
import { eventually } from '@warmpool/harness';
import { createNodeAgent } from '@warmpool/node-agent';
import { afterEach, describe, expect, it } from 'vitest';
import { call, FLEET_TOKEN, startNode, type Node } from './helpers.js';

interface ErrorAnswer {
  error: string;
  reason?: string;
  appliedGeneration?: number;
  reasons?: string[];
}

const POOL = { template: 'img', warm: 2 };

const open: Array<{ close(): Promise<void> }> = [];
async function node(...args: Parameters<typeof startNode>): Promise<Node> {
  const started = await startNode(...args);
  open.push(started);
  return started;
}

afterEach(async () => {
  for (const thing of open.splice(0).reverse()) await thing.close();
});

/** A node agent that does not poll, in front of the sandboxd at `sandboxdUrl`; answers its URL. */
async function agentFor(sandboxdUrl: string): Promise<string> {
  const agent = createNodeAgent({ sandboxdUrl, token: FLEET_TOKEN, pollIntervalMs: 60_000 });
  open.push(agent);
  return (await agent.start()).url;
}

/** A "sandboxd" that reads each request whole, shows it to `seen`, then drops the connection without answering. */
async function droppingSandboxd(seen: (method: string | undefined, body: string) => void): Promise<string> {
  const server = createServer((req) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      seen(req.method, body);
      req.socket.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  open.push({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function withWarmPool(n: Node, warm = 2): Promise<void> {
  expect(
    (await call(n.url, 'PUT', '/v1/pools', { body: { generation: 1, pools: [{ template: 'img', warm }] } })).status,
  ).toBe(200);
  await eventually(() => n.sandboxd.core.info().pools[0]?.warm === warm, { timeoutMs: 5_000, what: 'a warm pool' });
}

const GUARDED: Array<[string, string, unknown?]> = [
  ['PUT', '/v1/pools', { generation: 1, pools: [] }],
  ['GET', '/v1/info'],
  ['POST', '/v1/claim', { template: 'img' }],
  ['POST', '/v1/claims', { claims: [{ template: 'img' }] }],
  ['POST', '/v1/sandboxes/sb_x/release'],
  ['POST', '/v1/sandboxes/sb_x/renew', {}],
  ['GET', '/v1/sandboxes'],
  ['GET', '/v1/sandboxes/sb_x'],
  ['POST', '/v1/drain'],
  ['DELETE', '/v1/drain'],
];

describe('node agent auth', () => {
  it('answers every guarded endpoint 401 without a bearer token', async () => {
    const n = await node();
    for (const [method, path, body] of GUARDED) {
      const answer = await call<ErrorAnswer>(n.url, method, path, { token: null, body });
      expect(answer.status, `${method} ${path}`).toBe(401);
      expect(answer.body.error).toMatch(/bearer token/);
      expect(agentErrorBodySchema.parse(answer.body).reason).toBe('Unauthenticated');
      expect(answer.headers.get('www-authenticate')).toBe('Bearer');
    }
  });

  it('answers 401 to a wrong token on every root endpoint', async () => {
    const n = await node();
    for (const [method, path, body] of GUARDED.filter(([, p]) => !/release|renew/.test(p))) {
      const answer = await call<ErrorAnswer>(n.url, method, path, { token: 'not-the-fleet-token', body });
      expect(answer.status, `${method} ${path}`).toBe(401);
    }
  });

  it('serves /healthz, /readyz and /metrics without a token', async () => {
    const n = await node();
    expect(await call(n.url, 'GET', '/healthz', { token: null })).toMatchObject({ status: 200, body: 'ok' });
    expect(await call(n.url, 'GET', '/readyz', { token: null })).toMatchObject({ status: 200, body: 'ok' });
    const metrics = await call<string>(n.url, 'GET', '/metrics', { token: null });
    expect(metrics.status).toBe(200);
    expect(metrics.body).toContain('warmpool_agent_http_request_duration_seconds');
  });

  it('is fail-closed without a configured token: every guarded endpoint answers 503 and the agent is not ready', async () => {
    const n = await node({ token: undefined });
    for (const [method, path, body] of GUARDED) {
      for (const token of [null, FLEET_TOKEN, '']) {
        const answer = await call<ErrorAnswer>(n.url, method, path, { token, body });
        expect(answer.status, `${method} ${path}`).toBe(503);
        expect(answer.body.error).toMatch(/no API token configured/);
        expect(answer.body.reason).toBe('NoToken');
      }
    }
    expect((await call(n.url, 'GET', '/healthz', { token: null })).status).toBe(200);
    const ready = await call<ErrorAnswer>(n.url, 'GET', '/readyz', { token: null });
    expect(ready.status).toBe(503);
    expect(ready.body.reasons).toContain('no API token configured');
    expect(n.sandboxd.core.info().pools).toEqual([]);
  });

  it('treats an empty token as no token', async () => {
    const n = await node({ token: '  \n' });
    expect((await call(n.url, 'GET', '/v1/info', { token: '' })).status).toBe(503);
  });

  it('picks up a rotated token file without a restart, and refuses the old token once its grace is over', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-token-'));
    open.push({ close: async () => rmSync(dir, { recursive: true, force: true }) });
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, 'first-token\n');
    // This sandboxd takes any caller as root, so only the agent's own check is under test.
    const n = await node(
      { token: undefined, tokenFile, tokenReloadIntervalMs: 20, tokenGraceMs: 1_000 },
      { apiToken: undefined },
    );
    expect((await call(n.url, 'GET', '/v1/info', { token: 'first-token' })).status).toBe(200);
    writeFileSync(tokenFile, 'second-token\n');
    await eventually(async () => (await call(n.url, 'GET', '/v1/info', { token: 'second-token' })).status === 200, {
      timeoutMs: 5_000,
      what: 'the new token',
    });
    await eventually(async () => (await call(n.url, 'GET', '/v1/info', { token: 'first-token' })).status === 401, {
      timeoutMs: 5_000,
      what: 'the old token refused after its grace',
    });
    writeFileSync(tokenFile, '');
    await eventually(async () => (await call(n.url, 'GET', '/v1/info', { token: 'second-token' })).status === 503, {
      timeoutMs: 5_000,
      what: 'fail-closed on an emptied token',
    });
  });

  it("lets a sandbox's own token renew and release that sandbox, and nothing else", async () => {
    const n = await node();
    await withWarmPool(n);
    const claim = (await call<ClaimResponse>(n.url, 'POST', '/v1/claim', { body: { template: 'img' } })).body;
    expect((await call(n.url, 'GET', '/v1/info', { token: claim.token })).status).toBe(401);
    expect((await call(n.url, 'GET', `/v1/sandboxes/${claim.id}`, { token: claim.token })).status).toBe(401);
    const renewed = await call<{ deadline: string }>(n.url, 'POST', `/v1/sandboxes/${claim.id}/renew`, {
      token: claim.token,
      body: { ttl_seconds: 600 },
    });
    expect(renewed.status).toBe(200);
    expect(Date.parse(renewed.body.deadline)).toBeGreaterThan(Date.now() + 590_000);
    expect((await call(n.url, 'POST', `/v1/sandboxes/${claim.id}/release`, { token: claim.token })).status).toBe(204);
    expect(n.sandboxd.core.get(claim.id)).toBeUndefined();
  });

  it('hands a token that is neither to sandboxd, which answers 404 as it does for anyone without the right token', async () => {
    const n = await node();
    await withWarmPool(n);
    const claim = (await call<ClaimResponse>(n.url, 'POST', '/v1/claim', { body: { template: 'img' } })).body;
    const release = await call<ErrorAnswer>(n.url, 'POST', `/v1/sandboxes/${claim.id}/release`, {
      token: 'someone-elses-token',
    });
    expect(release.status).toBe(404);
    const renew = await call<ErrorAnswer>(n.url, 'POST', `/v1/sandboxes/${claim.id}/renew`, {
      token: 'someone-elses-token',
      body: {},
    });
    expect(renew.status).toBe(404);
    expect(n.sandboxd.core.get(claim.id)).toBeDefined();
  });
});

describe('SetPools (PUT /v1/pools)', () => {
  it("replaces the node's warm targets and answers the fresh info", async () => {
    const n = await node();
    const answer = await call<NodeInfo>(n.url, 'PUT', '/v1/pools', {
      body: { generation: 4, pools: [POOL, { template: 'other', size: 'large', warm: 1 }] },
    });
    expect(answer.status).toBe(200);
    expect(answer.body.pools.map((p) => [p.key, p.target])).toEqual([
      [{ template: 'img', net: 'none', size: 'small' }, 2],
      [{ template: 'other', net: 'none', size: 'large' }, 1],
    ]);
    expect(n.agent.generations.applied).toBe(4);
  });

  it('refuses a push older than the applied generation with 409, changing nothing', async () => {
    const n = await node();
    await call(n.url, 'PUT', '/v1/pools', { body: { generation: 5, pools: [POOL] } });
    const stale = await call<ErrorAnswer>(n.url, 'PUT', '/v1/pools', { body: { generation: 4, pools: [] } });
    expect(stale.status).toBe(409);
    expect(stale.body).toEqual({
      error: 'generation 4 is older than the applied generation 5',
      reason: 'StaleGeneration',
      appliedGeneration: 5,
    });
    expect(n.sandboxd.core.info().pools.map((p) => p.target)).toEqual([2]);
    expect(n.agent.generations.applied).toBe(5);
  });

  it('accepts the applied generation again: a retried push is idempotent', async () => {
    const n = await node();
    expect((await call(n.url, 'PUT', '/v1/pools', { body: { generation: 5, pools: [POOL] } })).status).toBe(200);
    expect((await call(n.url, 'PUT', '/v1/pools', { body: { generation: 5, pools: [POOL] } })).status).toBe(200);
    expect((await call(n.url, 'PUT', '/v1/pools', { body: { generation: 6, pools: [] } })).status).toBe(200);
    expect(n.sandboxd.core.info().pools).toEqual([]);
  });

  it('never leaves the node on an older generation when pushes race', async () => {
    const n = await node();
    const generations = [3, 9, 1, 7, 10, 2, 8, 5, 4, 6];
    const answers = await Promise.all(
      generations.map((generation) =>
        call(n.url, 'PUT', '/v1/pools', { body: { generation, pools: [{ template: 'img', warm: generation }] } }),
      ),
    );
    expect(answers.every((a) => a.status === 200 || a.status === 409)).toBe(true);
    expect(n.agent.generations.applied).toBe(10);
    expect(n.sandboxd.core.info().pools.map((p) => p.target)).toEqual([10]);
  });

  it('does not move the generation when sandboxd refuses the push', async () => {
    const n = await node();
    await call(n.url, 'PUT', '/v1/pools', { body: { generation: 2, pools: [POOL] } });
    await n.sandboxd.close();
    const answer = await call<ErrorAnswer>(n.url, 'PUT', '/v1/pools', { body: { generation: 3, pools: [] } });
    expect(answer.status).toBe(503);
    expect(n.agent.generations.applied).toBe(2);
  });

  it('treats a push sandboxd may have taken (read, then no answer) as applied: an older one is refused after it', async () => {
    // A sandboxd that applies every push it reads, then drops the connection before answering.
    const taken: number[] = [];
    const url = await agentFor(
      await droppingSandboxd((method, body) => {
        if (method === 'PUT') taken.push((JSON.parse(body) as { pools: Array<{ warm: number }> }).pools[0]?.warm ?? -1);
      }),
    );

    const newer = await call<ErrorAnswer>(url, 'PUT', '/v1/pools', {
      body: { generation: 5, pools: [{ template: 'img', warm: 5 }] },
    });
    expect(newer.status).toBe(502);
    // A deposed leader's push, arriving late: sandboxd may hold generation 5's targets, so this would roll them back.
    const older = await call<ErrorAnswer>(url, 'PUT', '/v1/pools', {
      body: { generation: 4, pools: [{ template: 'img', warm: 4 }] },
    });
    expect(older.status).toBe(409);
    expect(older.body.appliedGeneration).toBe(5);
    expect(taken).toEqual([5]);
    // The leader's own retry of the same generation still goes through.
    expect(
      (await call(url, 'PUT', '/v1/pools', { body: { generation: 5, pools: [{ template: 'img', warm: 5 }] } })).status,
    ).toBe(502);
    expect(taken).toEqual([5, 5]);
  });

  it.each([
    ['no generation', { pools: [POOL] }, /^generation: /],
    ['a negative generation', { generation: -1, pools: [POOL] }, /^generation: /],
    ['a fractional generation', { generation: 1.5, pools: [POOL] }, /^generation: /],
    ['no pools', { generation: 1 }, /^pools: /],
    [
      'a negative warm',
      { generation: 1, pools: [{ template: 'img', warm: -1 }] },
      /^pools\.0\.warm: warm must not be negative$/,
    ],
    [
      'warm_max below warm',
      { generation: 1, pools: [{ template: 'img', warm: 3, warm_max: 2 }] },
      /^pools\.0\.warm_max: warm_max must not be below warm$/,
    ],
    [
      'a duplicate key',
      { generation: 1, pools: [POOL, { template: 'img', net: 'none', warm: 1 }] },
      /^pools\.1: duplicate pool key img\|none\|small$/,
    ],
    ['an empty template', { generation: 1, pools: [{ template: '', warm: 1 }] }, /^pools\.0\.template: /],
  ])('answers 400 to %s, with where and why', async (_case, body, message) => {
    const n = await node();
    const answer = await call<ErrorAnswer>(n.url, 'PUT', '/v1/pools', { body });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatch(message);
    expect(answer.body.reason).toBe('BadRequest');
    expect(n.sandboxd.core.info().pools).toEqual([]);
  });
});

describe('claims and sandboxes', () => {
  it('claims, finds the claim by claim_ref and by id, renews and releases it', async () => {
    const n = await node();
    await withWarmPool(n);
    const claim = await call<ClaimResponse>(n.url, 'POST', '/v1/claim', {
      body: { template: 'img', claim_ref: 'team-a/job-1', ttl_seconds: 60 },
    });
    expect(claim.status).toBe(200);
    expect(claim.body).toEqual({
      id: expect.stringMatching(/^sb_/),
      token: expect.any(String),
      deadline: expect.any(String),
      owner_addr: expect.any(String),
    });

    const listed = await call<SandboxList>(n.url, 'GET', '/v1/sandboxes?claim_ref=team-a%2Fjob-1');
    expect(listed.status).toBe(200);
    expect(listed.body.sandboxes.map((s) => s.id)).toEqual([claim.body.id]);
    expect(listed.body.sandboxes[0]).not.toHaveProperty('token');
    expect((await call<SandboxList>(n.url, 'GET', '/v1/sandboxes?claim_ref=nobody')).body.sandboxes).toEqual([]);
    expect((await call<SandboxList>(n.url, 'GET', '/v1/sandboxes')).body.sandboxes).toHaveLength(1);

    const one = await call<SandboxRow>(n.url, 'GET', `/v1/sandboxes/${claim.body.id}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: claim.body.id, claim_ref: 'team-a/job-1', token: claim.body.token });

    const renewed = await call<{ deadline: string }>(n.url, 'POST', `/v1/sandboxes/${claim.body.id}/renew`, {
      body: { ttl_seconds: 120 },
    });
    expect(renewed.status).toBe(200);
    expect(Date.parse(renewed.body.deadline)).toBeGreaterThan(Date.parse(claim.body.deadline));
    expect((await call(n.url, 'POST', `/v1/sandboxes/${claim.body.id}/renew`, { rawBody: '' })).status).toBe(200);

    const released = await call(n.url, 'POST', `/v1/sandboxes/${claim.body.id}/release`);
    expect(released.status).toBe(204);
    expect(released.body).toBe('');
  });

  it("passes sandboxd's 404 through for an unknown sandbox", async () => {
    const n = await node();
    for (const [method, path] of [
      ['POST', '/v1/sandboxes/sb_nope/release'],
      ['POST', '/v1/sandboxes/sb_nope/renew'],
      ['GET', '/v1/sandboxes/sb_nope'],
    ] as const) {
      const answer = await call<ErrorAnswer>(n.url, method, path, {
        body: method === 'POST' && path.endsWith('renew') ? {} : undefined,
      });
      expect(answer, `${method} ${path}`).toMatchObject({ status: 404, body: { error: 'unknown sandbox' } });
    }
  });

  it("passes sandboxd's 429 through with its reason when the node is full", async () => {
    const n = await node({}, { maxClaims: 1 });
    await withWarmPool(n);
    expect((await call(n.url, 'POST', '/v1/claim', { body: { template: 'img' } })).status).toBe(200);
    const refused = await call<ErrorAnswer>(n.url, 'POST', '/v1/claim', { body: { template: 'img' } });
    expect(refused).toMatchObject({ status: 429, body: { error: 'node claim quota reached' } });
  });

  it("passes sandboxd's cold boot through for a key the node has no pool for", async () => {
    const n = await node();
    const answer = await call(n.url, 'POST', '/v1/claim', { body: { template: 'never-set', claim_ref: 'ns/cold' } });
    expect(answer).toMatchObject({ status: 200, body: { id: expect.any(String), token: expect.any(String) } });
  });

  it.each([
    ['a body that is not JSON', '{"template":', 'invalid request body'],
    ['no template', '{}', /^template: /],
    ['a negative ttl', '{"template":"img","ttl_seconds":-5}', /^ttl_seconds: /],
    ['an empty claim_ref', '{"template":"img","claim_ref":""}', /^claim_ref: /],
    ['a template with spaces', '{"template":"a b"}', /^template: must be printable: no whitespace/],
    ['a NUL in the template', '{"template":"img\\u0000"}', /^template: must be printable/],
    ['a DEL in the net', '{"template":"img","net":"n\\u007f"}', /^net: must be printable/],
    ['a C1 control in the size', '{"template":"img","size":"s\\u0085"}', /^size: must be printable/],
    ['a lone surrogate in the template', '{"template":"img\\ud800"}', /^template: must be printable/],
    ['a line separator in the template', '{"template":"img\\u2028"}', /^template: must be printable/],
  ])('answers 400 to a claim with %s', async (_case, rawBody, message) => {
    const n = await node();
    await withWarmPool(n);
    const answer = await call<ErrorAnswer>(n.url, 'POST', '/v1/claim', { rawBody });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatch(message);
    expect(n.sandboxd.core.claimedCount).toBe(0);
  });

  it('answers 400 to a malformed sandbox id or claim_ref, without asking sandboxd', async () => {
    const n = await node();
    expect((await call<ErrorAnswer>(n.url, 'GET', '/v1/sandboxes/..%2F..%2Fv1%2Finfo')).status).toBe(400);
    expect((await call<ErrorAnswer>(n.url, 'POST', `/v1/sandboxes/${'x'.repeat(200)}/release`)).status).toBe(400);
    expect((await call<ErrorAnswer>(n.url, 'GET', '/v1/sandboxes?claim_ref=')).body.error).toMatch(/^claim_ref: /);
    expect(
      (await call<ErrorAnswer>(n.url, 'POST', '/v1/sandboxes/sb_1/renew', { rawBody: '{"ttl_seconds":"soon"}' }))
        .status,
    ).toBe(400);
  });

  it('answers 404 with an error body on a path it does not serve', async () => {
    const n = await node();
    expect(await call(n.url, 'GET', '/v2/nothing')).toMatchObject({
      status: 404,
      body: { error: 'not found', reason: 'NotFound' },
    });
    expect(await call(n.url, 'GET', '/v1/info/')).toMatchObject({ status: 404, body: { reason: 'NotFound' } });
  });

  it('answers 405 with Allow, not 404, to every method a served path is not served with', async () => {
    const n = await node();
    const served = new Map<string, Set<string>>();
    for (const { path, method } of n.agent.app.routes) {
      if (method === 'ALL') continue;
      served.set(path, (served.get(path) ?? new Set()).add(method));
    }
    expect([...served.keys()].sort()).toEqual([
      '/healthz',
      '/metrics',
      '/openapi.json',
      '/readyz',
      '/v1/claim',
      '/v1/claims',
      '/v1/drain',
      '/v1/info',
      '/v1/pools',
      '/v1/sandboxes',
      '/v1/sandboxes/:id',
      '/v1/sandboxes/:id/release',
      '/v1/sandboxes/:id/renew',
    ]);
    for (const [pattern, methods] of served) {
      const path = pattern.replace(':id', 'sb_x');
      const allow = [...methods, ...(methods.has('GET') ? ['HEAD'] : [])].sort().join(', ');
      for (const method of ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'].filter((m) => !methods.has(m))) {
        const answer = await call<ErrorAnswer>(n.url, method, path);
        expect(answer.status, `${method} ${path}`).toBe(405);
        expect(answer.headers.get('allow'), `${method} ${path}`).toBe(allow);
        expect(answer.body.reason).toBe('MethodNotAllowed');
      }
    }
    expect(n.sandboxd.core.info().pools).toEqual([]);
  });
});

describe('request bodies', () => {
  it("refuses a body over 1 MiB with sandboxd's 400, whatever its declared length", async () => {
    const n = await node();
    const big = JSON.stringify({ template: 'img', claim_ref: 'x'.repeat(1024 * 1024) });
    expect(await call(n.url, 'POST', '/v1/claim', { rawBody: big })).toMatchObject({
      status: 400,
      body: { error: 'invalid request body' },
    });

    const chunk = new TextEncoder().encode('x'.repeat(64 * 1024));
    let sent = 0;
    const chunked = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 20) return controller.close();
        sent += 1;
        controller.enqueue(chunk);
      },
    });
    expect(await call(n.url, 'PUT', '/v1/pools', { rawBody: chunked })).toMatchObject({
      status: 400,
      body: { error: 'invalid request body' },
    });
  });

  it('accepts a body just under the limit', async () => {
    const n = await node();
    const pools = Array.from({ length: 3600 }, (_, i) => ({
      template: `t${i}-${'y'.repeat(200)}`,
      net: 'none',
      size: 'small',
      warm: 0,
    }));
    const body = JSON.stringify({ generation: 1, pools });
    expect(body.length).toBeGreaterThan(800 * 1024);
    expect(body.length).toBeLessThan(1024 * 1024);
    expect((await call(n.url, 'PUT', '/v1/pools', { rawBody: body })).status).toBe(200);
  });
});

describe('drain', () => {
  it('drains the node (claims answer 429) and lifts the drain', async () => {
    const n = await node();
    await withWarmPool(n);
    const drained = await call<NodeInfo>(n.url, 'POST', '/v1/drain');
    expect(drained.status).toBe(200);
    expect(drained.body.draining).toBe(true);
    expect(await call(n.url, 'POST', '/v1/claim', { body: { template: 'img' } })).toMatchObject({
      status: 429,
      body: { error: 'node draining' },
    });
    const lifted = await call<NodeInfo>(n.url, 'DELETE', '/v1/drain');
    expect(lifted.status).toBe(200);
    expect(lifted.body.draining ?? false).toBe(false);
  });
});

describe('when sandboxd is down', () => {
  it('answers 503 with a clear error, turns unready, and recovers when sandboxd is back', async () => {
    const n = await node();
    const port = new URL(n.sandboxd.url).port;
    await n.sandboxd.close();

    const claim = await call<ErrorAnswer>(n.url, 'POST', '/v1/claim', { body: { template: 'img' } });
    expect(claim.status).toBe(503);
    expect(claim.body).toMatchObject({
      error: expect.stringMatching(/^sandboxd unreachable \(ECONNREFUSED\); the call was not sent/),
      reason: 'SandboxdUnreachable',
    });
    expect(claim.headers.get('retry-after')).toBe('1');
    const ready = await eventually(
      async () => {
        const answer = await call<ErrorAnswer>(n.url, 'GET', '/readyz', { token: null });
        return answer.status === 503 ? answer : undefined;
      },
      { timeoutMs: 5_000, what: 'readyz to turn 503' },
    );
    expect(ready.body.reasons?.join()).toMatch(/sandboxd unreachable/);
    expect(await call(n.url, 'GET', '/healthz', { token: null })).toMatchObject({ status: 200 });

    n.sandboxd = await startFakeSandboxd({ apiToken: FLEET_TOKEN, port: Number(port) });
    await eventually(async () => (await call(n.url, 'GET', '/readyz', { token: null })).status === 200, {
      timeoutMs: 5_000,
      what: 'readyz to turn 200',
    });
    expect((await call(n.url, 'PUT', '/v1/pools', { body: { generation: 1, pools: [POOL] } })).status).toBe(200);
    const metrics = await call<string>(n.url, 'GET', '/metrics', { token: null });
    expect(metrics.body).toMatch(/warmpool_agent_sandboxd_errors_total\{operation="claim",kind="unreachable"\} 1/);
  });

  it('gives up on a call sandboxd does not answer in time with 504, outcome unknown and no Retry-After: the claim may have happened', async () => {
    const n = await node({ sandboxdTimeoutMs: 200 }, { coldBootMs: 2_000 });
    await call(n.url, 'PUT', '/v1/pools', { body: { generation: 1, pools: [{ template: 'img', warm: 0 }] } });
    const started = performance.now();
    const answer = await call<ErrorAnswer>(n.url, 'POST', '/v1/claim', {
      body: { template: 'img', claim_ref: 'ns/slow' },
    });
    expect(answer.status).toBe(504);
    expect(answer.body.reason).toBe('OutcomeUnknown');
    expect(answer.body.error).toMatch(
      /did not answer within 200 ms; the call may have taken effect .*GET \/v1\/sandboxes\?claim_ref=/,
    );
    expect(answer.headers.get('retry-after')).toBeNull();
    expect(performance.now() - started).toBeLessThan(1_500);
    // And it did: the claim_ref lookup is how a caller finds out.
    const found = await eventually(
      async () => {
        const listed = await call<SandboxList>(n.url, 'GET', '/v1/sandboxes?claim_ref=ns%2Fslow');
        return listed.body.sandboxes.length === 1 ? listed.body.sandboxes : undefined;
      },
      { timeoutMs: 10_000, what: 'the timed-out claim to show up' },
    );
    expect(found[0]?.claim_ref).toBe('ns/slow');
  });

  it('answers 502 outcome unknown, without Retry-After, when sandboxd drops the connection after reading the claim', async () => {
    // A listener that reads the whole request, then destroys the socket: the claim reached "sandboxd".
    let requests = 0;
    const url = await agentFor(await droppingSandboxd(() => (requests += 1)));

    const claim = await call<ErrorAnswer>(url, 'POST', '/v1/claim', {
      body: { template: 'img', claim_ref: 'ns/dropped' },
    });
    expect(claim.status).toBe(502);
    expect(claim.body.reason).toBe('OutcomeUnknown');
    expect(claim.body.error).toMatch(
      /sandboxd closed the connection before answering .*may have taken effect .*claim_ref/,
    );
    expect(claim.headers.get('retry-after')).toBeNull();
    expect(requests).toBeGreaterThanOrEqual(1);
    const metrics = await call<string>(url, 'GET', '/metrics', { token: null });
    expect(metrics.body).toMatch(/warmpool_agent_sandboxd_errors_total\{operation="claim",kind="connection_lost"\} 1/);
  });

  it("answers 503 with Retry-After when sandboxd's port is closed: the claim was never sent, a retry is safe", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const url = await agentFor(`http://127.0.0.1:${port}`);
    for (const [method, path, body] of [
      ['POST', '/v1/claim', { template: 'img' }],
      ['GET', '/v1/info', undefined],
      ['GET', '/v1/sandboxes', undefined],
    ] as const) {
      const answer = await call<ErrorAnswer>(url, method, path, { body });
      expect(answer.status, `${method} ${path}`).toBe(503);
      expect(answer.body.reason, `${method} ${path}`).toBe('SandboxdUnreachable');
      expect(answer.headers.get('retry-after'), `${method} ${path}`).toBe('1');
    }
  });

  it("tells a sandboxd that refuses the agent's token apart from one that is down", async () => {
    const n = await node({}, { apiToken: 'a-different-token' });
    const ready = await call<ErrorAnswer>(n.url, 'GET', '/readyz', { token: null });
    expect(ready.status).toBe(503);
    expect(ready.body.reasons?.join()).toMatch(/refuses the agent's token \(401\)/);
  });
});

describe('sandboxd on a unix socket', () => {
  it('serves the same API through a unix: URL', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-unix-'));
    const socketPath = join(dir, 'sandboxd.sock');
    const core = new FakeSandboxd({ coldBootMs: 10 });
    const server = createAdaptorServer({ fetch: createSandboxdApp(core, { apiToken: FLEET_TOKEN }).fetch });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    const agent = createNodeAgent({ sandboxdUrl: `unix:${socketPath}`, token: FLEET_TOKEN, pollIntervalMs: 50 });
    open.push({
      async close() {
        await agent.close();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        core.close();
        rmSync(dir, { recursive: true, force: true });
      },
    });
    const { url } = await agent.start();
    expect(server.address()).not.toMatchObject({ port: expect.any(Number) } satisfies Partial<AddressInfo>);
    expect((await call(url, 'PUT', '/v1/pools', { body: { generation: 1, pools: [POOL] } })).status).toBe(200);
    await eventually(() => core.info().pools[0]?.warm === 2, { timeoutMs: 5_000, what: 'a warm pool' });
    expect((await call<ClaimResponse>(url, 'POST', '/v1/claim', { body: { template: 'img' } })).status).toBe(200);
    expect(core.claimedCount).toBe(1);
  });
});

describe('metrics', () => {
  it('exports request latency by route and status, and per-pool warm and target', async () => {
    const n = await node();
    await withWarmPool(n);
    await call(n.url, 'POST', '/v1/claim', { body: { template: 'img' } });
    await call(n.url, 'POST', '/v1/claim', { token: 'wrong', body: { template: 'img' } });
    await eventually(
      async () =>
        (await call<string>(n.url, 'GET', '/metrics', { token: null })).body.includes(
          'warmpool_agent_pool_target{template="img",net="none",size="small"} 2',
        ),
      { timeoutMs: 5_000, what: 'pool gauges' },
    );
    const text = (await call<string>(n.url, 'GET', '/metrics', { token: null })).body;
    expect(text).toMatch(
      /warmpool_agent_http_request_duration_seconds_count\{route="claim",method="POST",status="200"\} 1/,
    );
    expect(text).toMatch(
      /warmpool_agent_http_request_duration_seconds_count\{route="claim",method="POST",status="401"\} 1/,
    );
    expect(text).toMatch(/warmpool_agent_pool_warm\{template="img",net="none",size="small"\} \d/);
    expect(text).toMatch(/warmpool_agent_applied_generation 1/);
    expect(text).toContain('warmpool_agent_inventory_publish_failures_total 0');
  });
});
