// The sandboxd HTTP contract (docs/sandboxd.md), over real HTTP on loopback:
// every endpoint, every documented refusal, and that a refusal changes
// nothing. The real daemon's variants (mesh, tenants, an older daemon, ...)
// are specified in variants.test.ts.
import {
  claimResponseSchema,
  INVALID_BODY_MESSAGE,
  MAX_BODY_BYTES,
  nodeInfoSchema,
  sandboxListSchema,
  sandboxRowSchema,
  type NodeInfo,
  type SandboxList,
} from '@warmpool/api';
import { eventually } from '@warmpool/harness';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startFakeSandboxd, type RunningFakeSandboxd, type StartFakeSandboxdOptions } from '../src/index.js';
import { SandboxdClient, type Answer } from './http-client.js';

const TOKEN = 'root-secret';
const DAY_MS = 24 * 3600_000;
const running: RunningFakeSandboxd[] = [];

async function startNode(
  options: StartFakeSandboxdOptions = {},
): Promise<{ node: RunningFakeSandboxd; api: SandboxdClient }> {
  const node = await startFakeSandboxd({
    apiToken: TOKEN,
    coldBootMs: 20,
    bootMs: 5,
    refillRate: 10_000,
    refillConcurrency: 100,
    maxClaims: 4,
    room: 20,
    // Most specs use the egress lane too; the node without an attachment is specified on its own.
    egressAttachment: true,
    ...options,
  });
  running.push(node);
  return { node, api: new SandboxdClient(node.url, options.apiToken === undefined ? TOKEN : options.apiToken) };
}

afterEach(async () => {
  await Promise.all(running.splice(0).map((n) => n.close()));
});

async function info(api: SandboxdClient): Promise<NodeInfo> {
  const answer = await api.get('/v1/info');
  expect(answer.status).toBe(200);
  return nodeInfoSchema.parse(answer.json);
}

async function list(api: SandboxdClient, query = ''): Promise<SandboxList> {
  const answer = await api.get(`/v1/sandboxes${query}`);
  expect(answer.status).toBe(200);
  return sandboxListSchema.parse(answer.json);
}

/** Set the pools and wait until every pool is warm to its target. */
async function warmUp(
  api: SandboxdClient,
  pools: Array<{ template: string; warm: number; net?: string; size?: string }>,
): Promise<void> {
  expect((await api.put('/v1/pools', { pools })).status).toBe(200);
  await eventually(async () => (await info(api)).pools.every((p) => p.warm === p.target && p.refilling === 0));
}

/** Claim, then wait for the refill it kicked to land, so later snapshots are stable. */
async function claim(api: SandboxdClient, body: Record<string, unknown>) {
  const answer = await api.post('/v1/claim', body);
  expect(answer.status, answer.text).toBe(200);
  await eventually(async () => (await info(api)).pools.every((p) => p.refilling === 0));
  return claimResponseSchema.parse(answer.json);
}

/** What a refused call must leave untouched. */
async function state(api: SandboxdClient): Promise<unknown> {
  return { info: await info(api), sandboxes: await list(api) };
}

async function expectRefused(
  api: SandboxdClient,
  call: () => Promise<Answer>,
  status: number,
  error?: string | RegExp,
): Promise<void> {
  const before = await state(api);
  const answer = await call();
  expect(answer.status, answer.text).toBe(status);
  expect(answer.json).toEqual({ error: expect.any(String) });
  if (error !== undefined) expect((answer.json as { error: string }).error).toMatch(error);
  expect(await state(api)).toEqual(before);
}

const exactly = (text: string): RegExp => new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);

describe('sandboxd contract: authentication', () => {
  let api: SandboxdClient;
  let sandboxId: string;
  beforeEach(async () => {
    ({ api } = await startNode());
    await warmUp(api, [{ template: 'img', warm: 2 }]);
    sandboxId = (await claim(api, { template: 'img' })).id;
  });

  it('answers /healthz without a token', async () => {
    const answer = await api.get('/healthz', { token: null });
    expect(answer).toMatchObject({ status: 200, text: 'ok' });
  });

  const rootCalls: Array<[string, string, unknown?]> = [
    ['PUT', '/v1/pools', { pools: [] }],
    ['GET', '/v1/info'],
    ['POST', '/v1/claim', { template: 'img' }],
    ['GET', '/v1/sandboxes'],
    ['GET', '/v1/sandboxes/:id'],
    ['POST', '/v1/drain'],
    ['DELETE', '/v1/drain'],
    ['GET', '/metrics'],
  ];

  for (const [method, path, body] of rootCalls) {
    it(`answers 401 to ${method} ${path} with a missing or wrong token, changing nothing`, async () => {
      const target = path.replace(':id', sandboxId);
      for (const token of [null, 'wrong', `${TOKEN}x`, '']) {
        await expectRefused(api, () => api.call(method, target, { token, body }), 401);
      }
      await expectRefused(
        api,
        () => api.call(method, target, { token: null, body, headers: { authorization: `Basic ${TOKEN}` } }),
        401,
      );
    });
  }

  it('accepts unauthenticated calls on a node configured without a token', async () => {
    const { api: open } = await startNode({ apiToken: '' });
    expect((await open.put('/v1/pools', { pools: [{ template: 'img', warm: 0 }] }, { token: null })).status).toBe(200);
    expect((await open.get('/v1/info', { token: null })).status).toBe(200);
  });

  it('on a node without a token, shows no sandbox tokens and acts on a sandbox only with its own token', async () => {
    const { api: open } = await startNode({ apiToken: '' });
    const granted = await open.post('/v1/claim', { template: 'img' }, { token: null });
    const { id, token } = granted.json as { id: string; token: string };
    const shown = await open.get(`/v1/sandboxes/${id}`, { token: null });
    expect(shown.status).toBe(200);
    expect(shown.json).not.toHaveProperty('token');
    expect((await open.post(`/v1/sandboxes/${id}/release`, undefined, { token: 'anything' })).status).toBe(404);
    expect((await open.post(`/v1/sandboxes/${id}/release`, undefined, { token })).status).toBe(204);
  });

  it('serves HEAD wherever it serves GET, as Go does', async () => {
    const { api } = await startNode();
    expect((await api.call('HEAD', '/v1/info')).status).toBe(200);
  });
});

describe('sandboxd contract: PUT /v1/pools', () => {
  let api: SandboxdClient;
  beforeEach(async () => {
    ({ api } = await startNode());
    await warmUp(api, [{ template: 'img', warm: 2 }]);
  });

  it('answers the fresh info body, with net and size defaulted', async () => {
    const answer = await api.put('/v1/pools', {
      pools: [
        { template: 'img', warm: 2 },
        { template: 'py', net: 'egress', size: 'large', warm: 3, warm_max: 5 },
      ],
    });
    expect(answer.status).toBe(200);
    const body = nodeInfoSchema.parse(answer.json);
    expect(body.pools).toEqual([
      { key: { template: 'img', net: 'none', size: 'small' }, warm: 2, refilling: 0, target: 2, golden: true },
      { key: { template: 'py', net: 'egress', size: 'large' }, warm: 0, refilling: 3, target: 3, golden: false },
    ]);
    expect(body.claimed).toBe(0);
  });

  const refusals: Array<[string, unknown, RegExp]> = [
    ['bad JSON', '{"pools": [', exactly(INVALID_BODY_MESSAGE)],
    ['an empty body', '', exactly(INVALID_BODY_MESSAGE)],
    ['a body without pools', { targets: [] }, /pools/],
    ['a negative warm', { pools: [{ template: 'img', warm: -1 }] }, /warm must not be negative/],
    ['a fractional warm', { pools: [{ template: 'img', warm: 1.5 }] }, /warm/],
    ['warm_max below warm', { pools: [{ template: 'img', warm: 3, warm_max: 2 }] }, /warm_max must not be below warm/],
    [
      'a duplicate key',
      {
        pools: [
          { template: 'a', warm: 1 },
          { template: 'a', warm: 2 },
        ],
      },
      /duplicate pool key/,
    ],
    [
      'a duplicate key spelled with defaults',
      {
        pools: [
          { template: 'a', warm: 1 },
          { template: 'a', net: 'none', size: 'small', warm: 2 },
        ],
      },
      /duplicate pool key/,
    ],
    ['a key with whitespace', { pools: [{ template: 'my img', warm: 1 }] }, /template/],
    ['an empty template', { pools: [{ template: '', warm: 1 }] }, /template/],
  ];
  for (const [what, body, error] of refusals) {
    it(`answers 400 to ${what}, changing nothing`, async () => {
      await expectRefused(api, () => api.put('/v1/pools', body), 400, error);
    });
  }

  it('answers 400 invalid request body to a body over 1 MiB, changing nothing', async () => {
    const huge = JSON.stringify({ pools: [{ template: 'big', warm: 1 }], pad: 'x'.repeat(MAX_BODY_BYTES) });
    await expectRefused(api, () => api.put('/v1/pools', huge), 400, exactly(INVALID_BODY_MESSAGE));
  });

  it('answers 400 invalid request body to a streamed body over 1 MiB, changing nothing', async () => {
    const before = await state(api);
    const chunk = new TextEncoder().encode(' '.repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent > MAX_BODY_BYTES) {
          controller.enqueue(new TextEncoder().encode('{"pools":[]}'));
          controller.close();
          return;
        }
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
    const response = await fetch(`${api.base}/v1/pools`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ error: INVALID_BODY_MESSAGE });
    expect(await state(api)).toEqual(before);
  });

  it('accepts a body of exactly 1 MiB', async () => {
    const body = JSON.stringify({ pools: [{ template: 'img', warm: 2 }] });
    const padded = body + ' '.repeat(MAX_BODY_BYTES - body.length);
    expect((await api.put('/v1/pools', padded)).status).toBe(200);
  });

  it('drains a key left out: warm sandboxes destroyed, entry retired, live claims untouched', async () => {
    await warmUp(api, [
      { template: 'img', warm: 2 },
      { template: 'py', warm: 2 },
    ]);
    const live = await claim(api, { template: 'py' });
    const answer = await api.put('/v1/pools', { pools: [{ template: 'img', warm: 2 }] });
    const body = nodeInfoSchema.parse(answer.json);
    expect(body.pools.map((p) => p.key.template)).toEqual(['img']);
    expect(body.claimed).toBe(1);
    expect((await list(api)).sandboxes.map((s) => s.id)).toEqual([live.id]);
    const cold = await claim(api, { template: 'py' });
    expect((await info(api)).pools.map((p) => p.key.template)).toEqual(['img']);
    expect((await list(api)).sandboxes.map((s) => s.id)).toEqual([live.id, cold.id]);
  });
});

describe('sandboxd contract: POST /v1/claim', () => {
  let node: RunningFakeSandboxd;
  let api: SandboxdClient;
  beforeEach(async () => {
    ({ node, api } = await startNode());
    await warmUp(api, [
      { template: 'img', warm: 2 },
      { template: 'empty', warm: 0 },
    ]);
  });

  it('hands over a warm sandbox: id, token, deadline in 300 s, owner_addr of the node', async () => {
    const before = Date.now();
    const answer = await claim(api, { template: 'img', claim_ref: 'ns/a' });
    expect(answer.id).toMatch(/^sb_/);
    expect(answer.owner_addr).toBe(`127.0.0.1:${node.server.address.port}`);
    const deadline = Date.parse(answer.deadline);
    expect(deadline).toBeGreaterThanOrEqual(before + 300_000);
    expect(deadline).toBeLessThanOrEqual(Date.now() + 300_000);
    expect(answer.deadline).toBe(new Date(deadline).toISOString());
  });

  it('boots cold when the pool has nothing warm, and counts the tier in /metrics', async () => {
    await claim(api, { template: 'empty' });
    await claim(api, { template: 'img' });
    const metrics = (await api.get('/metrics')).text;
    expect(metrics).toMatch(/sandboxd_claims_total\{tier="cold"\} 1/);
    expect(metrics).toMatch(/sandboxd_claims_total\{tier="warm"\} 1/);
  });

  it('grants the default lease for ttl_seconds 0 and at most 24 h', async () => {
    const zero = await claim(api, { template: 'img', ttl_seconds: 0 });
    const long = await claim(api, { template: 'img', ttl_seconds: 7 * 24 * 3600 });
    expect(Date.parse(zero.deadline) - Date.now()).toBeGreaterThan(299_000);
    expect(Date.parse(zero.deadline) - Date.now()).toBeLessThanOrEqual(300_000);
    expect(Date.parse(long.deadline) - Date.now()).toBeGreaterThan(DAY_MS - 5_000);
    expect(Date.parse(long.deadline) - Date.now()).toBeLessThanOrEqual(DAY_MS);
  });

  it('boots a key with no pool on the node cold, creating no pool entry', async () => {
    const before = await info(api);
    const started = Date.now();
    const cold = await claim(api, { template: 'nope', claim_ref: 'ns/cold-1' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(15); // coldBootMs 20, give or take a timer tick
    const other = await claim(api, { template: 'img', net: 'egress' });
    expect((await info(api)).pools).toEqual(before.pools);
    expect((await info(api)).claimed).toBe(before.claimed + 2);
    expect((await list(api, '?claim_ref=ns/cold-1')).sandboxes).toEqual([
      expect.objectContaining({ id: cold.id, key: { template: 'nope', net: 'none', size: 'small' } }),
    ]);
    expect((await list(api)).sandboxes.find((s) => s.id === other.id)?.key).toEqual({
      template: 'img',
      net: 'egress',
      size: 'small',
    });
  });

  it('answers 400 to a malformed key, changing nothing', async () => {
    await expectRefused(api, () => api.post('/v1/claim', { template: 'img', net: 'no spaces allowed' }), 400, /net/);
  });

  it('answers 400 to a bad body, changing nothing', async () => {
    await expectRefused(api, () => api.post('/v1/claim', '{"template":'), 400, exactly(INVALID_BODY_MESSAGE));
    await expectRefused(api, () => api.post('/v1/claim', {}), 400, /template/);
    await expectRefused(api, () => api.post('/v1/claim', { template: 'img', ttl_seconds: -1 }), 400, /ttl_seconds/);
    await expectRefused(
      api,
      () => api.post('/v1/claim', { template: 'img', pad: 'x'.repeat(MAX_BODY_BYTES) }),
      400,
      exactly(INVALID_BODY_MESSAGE),
    );
  });

  it('answers 429 while draining, changing nothing', async () => {
    expect((await api.post('/v1/drain')).status).toBe(200);
    await expectRefused(api, () => api.post('/v1/claim', { template: 'img' }), 429, /draining/);
  });

  it('answers 429 at max_claims, changing nothing', async () => {
    for (let i = 0; i < 4; i++) await claim(api, { template: 'img' });
    await expectRefused(api, () => api.post('/v1/claim', { template: 'img' }), 429, /^node claim quota reached$/);
  });

  it('answers 429 when nothing is warm and the node has no room to boot', async () => {
    const { api: small } = await startNode({ room: 2 });
    await warmUp(small, [
      { template: 'img', warm: 2 },
      { template: 'empty', warm: 0 },
    ]);
    await expectRefused(small, () => small.post('/v1/claim', { template: 'empty' }), 429, /no room/);
  });

  it('answers 500 when provisioning fails, changing nothing', async () => {
    const { api: flaky } = await startNode({ claimFailureRate: 1 });
    await warmUp(flaky, [{ template: 'img', warm: 1 }]);
    await expectRefused(flaky, () => flaky.post('/v1/claim', { template: 'img' }), 500, /provisioning failed/);
  });
});

describe('sandboxd contract: sandboxes', () => {
  let api: SandboxdClient;
  beforeEach(async () => {
    ({ api } = await startNode());
    await warmUp(api, [{ template: 'img', warm: 3 }]);
  });

  it('lists only the claims recorded under exactly the claim_ref, never tokens', async () => {
    const a = await claim(api, { template: 'img', claim_ref: 'team-a/job' });
    await claim(api, { template: 'img', claim_ref: 'team-a/job-2' });
    await claim(api, { template: 'img' });
    const all = await api.get('/v1/sandboxes');
    expect(all.text).not.toContain('token');
    expect(sandboxListSchema.parse(all.json).sandboxes).toHaveLength(3);
    const filtered = await list(api, '?claim_ref=team-a%2Fjob');
    expect(filtered.sandboxes).toEqual([
      {
        id: a.id,
        key: { template: 'img', net: 'none', size: 'small' },
        deadline: a.deadline,
        claimed_at: expect.any(String),
        claim_ref: 'team-a/job',
        hibernated: false,
      },
    ]);
    expect((await list(api, '?claim_ref=team-a')).sandboxes).toEqual([]);
  });

  it('shows one sandbox with its token to the root caller', async () => {
    const a = await claim(api, { template: 'img', claim_ref: 'ns/a' });
    const answer = await api.get(`/v1/sandboxes/${a.id}`);
    expect(answer.status).toBe(200);
    expect(sandboxRowSchema.parse(answer.json)).toMatchObject({
      id: a.id,
      token: a.token,
      claim_ref: 'ns/a',
      deadline: a.deadline,
    });
  });

  it('does not show a sandbox to its own token (a root verb)', async () => {
    const a = await claim(api, { template: 'img' });
    expect((await api.get(`/v1/sandboxes/${a.id}`, { token: a.token })).status).toBe(401);
  });

  it('answers 404 for an unknown id on every sandbox verb, changing nothing', async () => {
    await claim(api, { template: 'img' });
    await expectRefused(api, () => api.get('/v1/sandboxes/sb_unknown'), 404);
    await expectRefused(api, () => api.post('/v1/sandboxes/sb_unknown/release'), 404);
    await expectRefused(api, () => api.post('/v1/sandboxes/sb_unknown/renew', { ttl_seconds: 10 }), 404);
  });

  it('releases with the sandbox own token: 204, then 404', async () => {
    const a = await claim(api, { template: 'img' });
    const answer = await api.post(`/v1/sandboxes/${a.id}/release`, undefined, { token: a.token });
    expect(answer).toMatchObject({ status: 204, text: '' });
    expect((await list(api)).sandboxes).toEqual([]);
    expect((await api.post(`/v1/sandboxes/${a.id}/release`, undefined, { token: a.token })).status).toBe(404);
  });

  it('releases with the root token', async () => {
    const a = await claim(api, { template: 'img' });
    expect((await api.post(`/v1/sandboxes/${a.id}/release`)).status).toBe(204);
  });

  it('answers 404 to a release with a wrong or foreign token, changing nothing', async () => {
    const a = await claim(api, { template: 'img' });
    const b = await claim(api, { template: 'img' });
    for (const token of ['wrong', b.token]) {
      await expectRefused(
        api,
        () => api.post(`/v1/sandboxes/${a.id}/release`, undefined, { token }),
        404,
        exactly('unknown sandbox'),
      );
    }
  });

  it('answers 401 to a release or renew without a bearer token, changing nothing', async () => {
    const a = await claim(api, { template: 'img' });
    for (const verb of ['release', 'renew']) {
      await expectRefused(
        api,
        () => api.post(`/v1/sandboxes/${a.id}/${verb}`, undefined, { token: null }),
        401,
        exactly('missing bearer token'),
      );
    }
  });

  it('renews from now with the sandbox own token, clamped to 24 h', async () => {
    const a = await claim(api, { template: 'img', ttl_seconds: 10 });
    const answer = await api.post(`/v1/sandboxes/${a.id}/renew`, { ttl_seconds: 10 * 24 * 3600 }, { token: a.token });
    expect(answer.status).toBe(200);
    const { deadline } = answer.json as { deadline: string };
    expect(Object.keys(answer.json as object)).toEqual(['deadline']);
    expect(Date.parse(deadline) - Date.now()).toBeGreaterThan(DAY_MS - 5_000);
    expect(Date.parse(deadline) - Date.now()).toBeLessThanOrEqual(DAY_MS);
    expect((await list(api)).sandboxes[0]?.deadline).toBe(deadline);
  });

  it('renews for the default lease when ttl_seconds is absent, or the body empty', async () => {
    const a = await claim(api, { template: 'img', ttl_seconds: 10 });
    for (const body of [{}, undefined]) {
      const answer = await api.post(`/v1/sandboxes/${a.id}/renew`, body);
      expect(answer.status).toBe(200);
      expect(Date.parse((answer.json as { deadline: string }).deadline) - Date.now()).toBeGreaterThan(299_000);
    }
  });

  it('answers 404 to a renew with a wrong token and 400 to a bad body, changing nothing', async () => {
    const a = await claim(api, { template: 'img', ttl_seconds: 10 });
    await expectRefused(
      api,
      () => api.post(`/v1/sandboxes/${a.id}/renew`, { ttl_seconds: 100 }, { token: 'wrong' }),
      404,
    );
    await expectRefused(
      api,
      () => api.post(`/v1/sandboxes/${a.id}/renew`, { ttl_seconds: -5 }, { token: a.token }),
      400,
      /ttl_seconds/,
    );
    await expectRefused(
      api,
      () => api.post(`/v1/sandboxes/${a.id}/renew`, 'nope', { token: a.token }),
      400,
      exactly(INVALID_BODY_MESSAGE),
    );
  });

  it('reaps a claim at its deadline even though nobody released it', async () => {
    const a = await claim(api, { template: 'img', ttl_seconds: 1 });
    expect((await api.get(`/v1/sandboxes/${a.id}`)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await api.get(`/v1/sandboxes/${a.id}`)).status).toBe(404);
    expect((await api.get('/metrics')).text).toMatch(/sandboxd_reaps_total 1/);
  });
});

describe('sandboxd contract: drain', () => {
  it('refuses new claims, destroys warm sandboxes, keeps live claims; DELETE lifts it and refills', async () => {
    const { api } = await startNode();
    await warmUp(api, [{ template: 'img', warm: 3 }]);
    const live = await claim(api, { template: 'img' });

    const drained = await api.post('/v1/drain');
    expect(drained.status).toBe(200);
    expect(nodeInfoSchema.parse(drained.json)).toMatchObject({
      draining: true,
      claimed: 1,
      pools: [{ warm: 0, target: 3 }],
    });
    expect((await list(api)).sandboxes.map((s) => s.id)).toEqual([live.id]);
    expect((await api.get('/metrics')).text).toMatch(/sandboxd_draining 1/);

    const lifted = await api.delete('/v1/drain');
    expect(lifted.status).toBe(200);
    expect(nodeInfoSchema.parse(lifted.json).draining).toBeUndefined();
    await eventually(async () => (await info(api)).pools[0]?.warm === 3);
    await claim(api, { template: 'img' });
  });
});

describe('sandboxd contract: metrics and the rest', () => {
  it('serves per-pool gauges, claimed, draining and the counters', async () => {
    const { api } = await startNode();
    await warmUp(api, [{ template: 'img', warm: 2 }]);
    const a = await claim(api, { template: 'img' });
    await api.post(`/v1/sandboxes/${a.id}/release`);
    const answer = await api.get('/metrics');
    expect(answer.status).toBe(200);
    for (const line of [
      'sandboxd_pool_target{template="img",net="none",size="small"} 2',
      'sandboxd_claimed 0',
      'sandboxd_draining 0',
      'sandboxd_claims_total{tier="warm"} 1',
      'sandboxd_releases_total 1',
      'sandboxd_reaps_total 0',
    ]) {
      expect(answer.text).toContain(line);
    }
    expect(answer.text).toMatch(/sandboxd_pool_warm\{template="img",net="none",size="small"\} [12]/);
  });

  it("answers unknown routes as Go's mux does: a plain-text 404, or a 405 with Allow for another method", async () => {
    const { api } = await startNode();
    const missing = await api.get('/v2/nothing');
    expect(missing).toMatchObject({ status: 404, text: '404 page not found\n' });
    expect(missing.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    const wrongMethod = await api.delete('/v1/claim');
    expect(wrongMethod).toMatchObject({ status: 405, text: 'Method Not Allowed\n' });
    expect(wrongMethod.headers.get('allow')).toBe('POST');
    expect((await api.put('/v1/drain')).headers.get('allow')).toBe('DELETE, POST');
    expect((await api.post('/v1/info')).headers.get('allow')).toBe('GET, HEAD');
  });
});
