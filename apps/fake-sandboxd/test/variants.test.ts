// The real daemon's variants and strict edges (docs/sandboxd.md), each behind
// the switch that turns it on, over real HTTP on loopback: mesh redirects, the
// three owner_addr forms, rows without claimed_at, an older daemon, tenant
// tokens, the closed key axes and the egress attachment, strict PUT decoding,
// and PUT /v1/pools waiting for the VMs it trims.
import {
  claimGrantSchema,
  claimRedirectSchema,
  nodeInfoSchema,
  sandboxdListSchema,
  type NodeInfo,
  type SandboxdList,
} from '@warmpool/api';
import { eventually } from '@warmpool/harness';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeSandboxd, type RunningFakeSandboxd, type StartFakeSandboxdOptions } from '../src/index.js';
import { SandboxdClient, type Answer } from './http-client.js';

const TOKEN = 'root-secret';
const PEERS = ['10.0.0.6:7777', '10.0.0.7:7777', '10.0.0.8:7777'];
const running: RunningFakeSandboxd[] = [];

async function startNode(
  options: StartFakeSandboxdOptions = {},
): Promise<{ node: RunningFakeSandboxd; api: SandboxdClient }> {
  const node = await startFakeSandboxd({
    apiToken: TOKEN,
    coldBootMs: 5,
    bootMs: 5,
    refillRate: 10_000,
    refillConcurrency: 100,
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

async function list(api: SandboxdClient, query = '', token?: string): Promise<SandboxdList> {
  const answer = await api.get(`/v1/sandboxes${query}`, token === undefined ? {} : { token });
  expect(answer.status).toBe(200);
  return sandboxdListSchema.parse(answer.json);
}

async function warmUp(api: SandboxdClient, pools: Array<Record<string, unknown>>): Promise<void> {
  expect((await api.put('/v1/pools', { pools })).status).toBe(200);
  await eventually(async () => (await info(api)).pools.every((p) => p.warm === p.target && p.refilling === 0));
}

async function grant(api: SandboxdClient, body: Record<string, unknown>, token?: string) {
  const answer = await api.post('/v1/claim', body, token === undefined ? {} : { token });
  expect(answer.status, answer.text).toBe(200);
  return claimGrantSchema.parse(answer.json);
}

/** What a refused call must leave untouched. */
async function state(api: SandboxdClient): Promise<unknown> {
  return { info: await info(api), sandboxes: await list(api) };
}

async function expectRefused(api: SandboxdClient, call: () => Promise<Answer>, status: number, error: RegExp) {
  const before = await state(api);
  const answer = await call();
  expect(answer.status, answer.text).toBe(status);
  expect((answer.json as { error: string }).error).toMatch(error);
  expect(await state(api)).toEqual(before);
}

describe('fake-sandboxd in mesh mode (redirectPeers)', () => {
  it('redirects a warm miss to at most two peers, and serves it itself when the retry says no_redirect', async () => {
    const { api } = await startNode({ redirectPeers: PEERS });
    await warmUp(api, [{ template: 'img', warm: 0 }]);
    const answer = await api.post('/v1/claim', { template: 'img' });
    expect(answer.status).toBe(200);
    expect(claimRedirectSchema.parse(answer.json)).toEqual({ redirect: PEERS.slice(0, 2) });
    expect((await info(api)).claimed).toBe(0);
    await grant(api, { template: 'img', no_redirect: true });
    expect((await info(api)).claimed).toBe(1);
  });

  it('hands over a warm sandbox without redirecting, and lists its peers in the info', async () => {
    const { api } = await startNode({ redirectPeers: PEERS });
    await warmUp(api, [{ template: 'img', warm: 1 }]);
    await grant(api, { template: 'img' });
    expect((await info(api)).peers).toEqual(PEERS);
  });

  it('redirects at max claims and while draining, where a node alone answers 429', async () => {
    const { api } = await startNode({ redirectPeers: PEERS, maxClaims: 1 });
    await warmUp(api, [{ template: 'img', warm: 2 }]);
    await grant(api, { template: 'img' });
    expect((await api.post('/v1/claim', { template: 'img' })).json).toEqual({ redirect: PEERS.slice(0, 2) });
    expect((await api.post('/v1/claim', { template: 'img', no_redirect: true })).status).toBe(429);
    await api.post('/v1/drain');
    expect((await api.post('/v1/claim', { template: 'img' })).json).toEqual({ redirect: PEERS.slice(0, 2) });
  });

  it('never redirects on a node alone', async () => {
    const { api } = await startNode();
    await warmUp(api, [{ template: 'img', warm: 0 }]);
    await grant(api, { template: 'img' });
  });
});

describe('fake-sandboxd owner_addr', () => {
  it('names the bound address by default, the advertise address when set', async () => {
    const { node, api } = await startNode();
    expect((await grant(api, { template: 'img' })).owner_addr).toBe(node.url.replace('http://', ''));
    const { api: advertised } = await startNode({ advertise: '10.0.0.5:7777' });
    expect((await grant(advertised, { template: 'img' })).owner_addr).toBe('10.0.0.5:7777');
  });

  it('is absent without an advertise address', async () => {
    const { api } = await startNode({ advertise: false });
    const answer = await api.post('/v1/claim', { template: 'img' });
    expect(answer.json).not.toHaveProperty('owner_addr');
  });

  it('is the full origin with a client advertise origin', async () => {
    const { api } = await startNode({ clientAdvertise: 'https://node-a.example:8443' });
    expect((await grant(api, { template: 'img' })).owner_addr).toBe('https://node-a.example:8443');
  });
});

describe('fake-sandboxd rows without claimed_at (omitClaimedAt)', () => {
  it('lists and shows rows with no claimed_at', async () => {
    const { api } = await startNode({ omitClaimedAt: true });
    const a = await grant(api, { template: 'img' });
    expect((await list(api)).sandboxes[0]).not.toHaveProperty('claimed_at');
    expect((await api.get(`/v1/sandboxes/${a.id}`)).json).not.toHaveProperty('claimed_at');
  });
});

describe('fake-sandboxd as an older daemon (olderDaemon)', () => {
  it('ignores ?claim_ref= and lists every claim', async () => {
    const { api } = await startNode({ olderDaemon: true });
    await grant(api, { template: 'img', claim_ref: 'ns/a' });
    await grant(api, { template: 'img', claim_ref: 'ns/b' });
    expect((await list(api, '?claim_ref=ns%2Fa')).sandboxes).toHaveLength(2);
  });

  it('has no renew route: a plain-text 404, the claim untouched', async () => {
    const { api } = await startNode({ olderDaemon: true });
    const a = await grant(api, { template: 'img', ttl_seconds: 60 });
    const answer = await api.post(`/v1/sandboxes/${a.id}/renew`, { ttl_seconds: 600 }, { token: a.token });
    expect(answer).toMatchObject({ status: 404, text: '404 page not found\n' });
    expect((await list(api)).sandboxes[0]?.deadline).toBe(a.deadline);
  });
});

describe('fake-sandboxd tenant tokens (tenants)', () => {
  const TENANTS = { 'team-a': 'tok-a', 'team-b': 'tok-b' };

  it('lets a tenant claim, stamps its claims, and lists it only its own', async () => {
    const { api } = await startNode({ tenants: TENANTS });
    const mine = await grant(api, { template: 'img' }, 'tok-a');
    await grant(api, { template: 'img' }, 'tok-b');
    await grant(api, { template: 'img' });
    expect((await list(api, '', 'tok-a')).sandboxes).toEqual([
      expect.objectContaining({ id: mine.id, tenant: 'team-a' }),
    ]);
    expect((await list(api)).sandboxes.map((r) => r.tenant)).toEqual(['team-a', 'team-b', undefined]);
  });

  it.each([
    ['GET', '/v1/info'],
    ['PUT', '/v1/pools'],
    ['POST', '/v1/drain'],
    ['DELETE', '/v1/drain'],
    ['GET', '/metrics'],
    ['GET', '/v1/sandboxes/sb_any'],
  ])('answers a tenant 403 on %s %s, changing nothing', async (method, path) => {
    const { api } = await startNode({ tenants: TENANTS });
    await grant(api, { template: 'img' });
    await expectRefused(
      api,
      () => api.call(method, path, { token: 'tok-a', body: method === 'PUT' ? { pools: [] } : undefined }),
      403,
      /^operator token required$/,
    );
  });

  it('answers an unknown token 401, and a tenant acting on a sandbox by id 404', async () => {
    const { api } = await startNode({ tenants: TENANTS });
    const a = await grant(api, { template: 'img' });
    await expectRefused(
      api,
      () => api.post('/v1/claim', { template: 'img' }, { token: 'nobody' }),
      401,
      /invalid api token/,
    );
    await expectRefused(
      api,
      () => api.post(`/v1/sandboxes/${a.id}/release`, undefined, { token: 'tok-a' }),
      404,
      /unknown sandbox/,
    );
  });
});

describe('fake-sandboxd key axes and the egress attachment', () => {
  it('answers 400 to a claim or a pool outside the closed net and size sets, changing nothing', async () => {
    const { api } = await startNode({ egressAttachment: true });
    await warmUp(api, [{ template: 'img', warm: 1 }]);
    await expectRefused(api, () => api.post('/v1/claim', { template: 'img', net: 'gpu' }), 400, /unknown net shape/);
    await expectRefused(api, () => api.post('/v1/claim', { template: 'img', size: 'huge' }), 400, /unknown size/);
    await expectRefused(
      api,
      () => api.put('/v1/pools', { pools: [{ template: 'img', warm: 1, size: '4xlarge' }] }),
      400,
      /unknown size/,
    );
  });

  it('answers 409 to egress on a node without an egress attachment, applying nothing of the set', async () => {
    const { api } = await startNode();
    await warmUp(api, [{ template: 'img', warm: 1 }]);
    const noEgress = /node has no egress attachment/;
    await expectRefused(api, () => api.post('/v1/claim', { template: 'img', net: 'egress' }), 409, noEgress);
    const set = {
      pools: [
        { template: 'new', warm: 2 },
        { template: 'img', net: 'egress', warm: 1 },
      ],
    };
    await expectRefused(api, () => api.put('/v1/pools', set), 409, noEgress);
  });

  it('serves egress claims and pools on a node with one', async () => {
    const { api } = await startNode({ egressAttachment: true });
    await warmUp(api, [{ template: 'img', net: 'egress', warm: 1 }]);
    expect((await grant(api, { template: 'img', net: 'egress' })).id).toMatch(/^sb_/);
  });
});

describe('fake-sandboxd PUT /v1/pools decoding', () => {
  it.each([
    ['an unknown field in a pool', { pools: [{ template: 'img', warm: 1, wram: 2 }] }],
    ['an unknown top-level field', { pools: [{ template: 'img', warm: 1 }], generation: 7 }],
    [
      'one bad entry among good ones',
      {
        pools: [
          { template: 'ok', warm: 1 },
          { template: 'img', warm: -1 },
        ],
      },
    ],
    [
      'hibernation on an egress pool',
      { pools: [{ template: 'img', net: 'egress', warm: 1, idle_hibernate_seconds: 9 }] },
    ],
    ['archiving before hibernation', { pools: [{ template: 'img', warm: 1, archive_after_seconds: 60 }] }],
  ])('answers 400 to %s, applying nothing', async (_what, body) => {
    const { api } = await startNode({ egressAttachment: true });
    await warmUp(api, [{ template: 'img', warm: 1 }]);
    await expectRefused(api, () => api.put('/v1/pools', body), 400, /./);
  });

  it('accepts warm_max and the hibernate and archive durations', async () => {
    const { api } = await startNode();
    const pool = { template: 'img', warm: 1, warm_max: 4, idle_hibernate_seconds: 60, archive_after_seconds: 600 };
    const answer = await api.put('/v1/pools', { pools: [{ ...pool, archive_delete_after_seconds: 0 }] });
    expect(answer.status, answer.text).toBe(200);
  });
});

describe('fake-sandboxd PUT /v1/pools trimming (trimMsPerVm)', () => {
  it('answers once the trimmed warm VMs are destroyed, with the info of that moment', async () => {
    const { api } = await startNode({ trimMsPerVm: 150, refillConcurrency: 2 });
    await warmUp(api, [{ template: 'img', warm: 3 }]);
    const started = Date.now();
    // Three VMs trimmed, two at a time: two rounds of 150 ms.
    const answer = await api.put('/v1/pools', { pools: [{ template: 'img', warm: 0 }] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(nodeInfoSchema.parse(answer.json).pools).toEqual([
      { key: { template: 'img', net: 'none', size: 'small' }, warm: 0, refilling: 0, target: 0, golden: true },
    ]);
  });
});
