// The agent in front of sandboxd as the real one behaves. Each variant the
// fake has a switch for is run against fake-sandboxd itself (docs/sandboxd.md,
// "The variants warmpool must tolerate"): a mesh node, an older daemon that
// ignores `?claim_ref=`, rows without claimed_at, owner_addr absent or a full
// URL, tenant tokens. What the fake cannot answer — a redirect despite
// `no_redirect` (the real daemon honours it too), answer fields it never adds,
// a row without an id — and the bodies the agent forwards are seen through the
// harness's SandboxdVariant in front of a fake.
import { type SandboxList } from '@warmpool/api';
import { startFakeSandboxd, type RunningFakeSandboxd, type StartFakeSandboxdOptions } from '@warmpool/fake-sandboxd';
import { startSandboxdVariant, type SandboxdVariant } from '@warmpool/harness';
import {
  createNodeAgent,
  nodeClaimsReader,
  OwnerAddress,
  SandboxdClient,
  type NodeAgent,
  type NodeAgentOptions,
} from '@warmpool/node-agent';
import { silentLogger, type Logger } from '@warmpool/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { call, FLEET_TOKEN, startNode, type Node } from './helpers.js';

const MESH_PEERS = ['10.0.0.6:7777', '10.0.0.7:7777'];

const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

/** An agent in front of fake-sandboxd started with the variant's switches. */
async function nodeWith(
  sandboxdOptions: StartFakeSandboxdOptions,
  agentOptions: Partial<NodeAgentOptions> = {},
): Promise<Node> {
  const node = await startNode({ pollIntervalMs: 50, ...agentOptions }, { coldBootMs: 5, ...sandboxdOptions });
  open.push(() => node.close());
  return node;
}

interface Stack {
  sandboxd: RunningFakeSandboxd;
  variant: SandboxdVariant;
  agent: NodeAgent;
  url: string;
}

/** An agent in front of the stand-in, in front of a fake: for what the fake cannot answer, and to see bodies. */
async function standIn(behaviour: SandboxdVariant['behaviour'] = {}): Promise<Stack> {
  const sandboxd = await startFakeSandboxd({ apiToken: FLEET_TOKEN, coldBootMs: 5 });
  open.push(() => sandboxd.close());
  const variant = await startSandboxdVariant(sandboxd.url, behaviour);
  open.push(() => variant.close());
  const agent = createNodeAgent({ sandboxdUrl: variant.url, token: FLEET_TOKEN, pollIntervalMs: 50 });
  const { url } = await agent.start();
  open.push(() => agent.close());
  return { sandboxd, variant, agent, url };
}

function recordingLogger(): Logger & { warnings: Array<{ msg: string; fields: unknown }> } {
  const warnings: Array<{ msg: string; fields: unknown }> = [];
  return Object.assign(Object.create(silentLogger) as Logger, {
    warnings,
    warn: (msg: string, fields?: unknown) => warnings.push({ msg, fields }),
  });
}

describe("the agent in front of fake-sandboxd in the real daemon's variants", () => {
  it('a mesh node serves every claim the agent forwards, even a warm miss: no_redirect on the direct path and through Hono', async () => {
    const { sandboxd, agent, url } = await nodeWith({ redirectPeers: MESH_PEERS });
    // A mesh node redirects a warm miss that does not say no_redirect (nothing is warm here: there is no pool).
    const asked = await call(sandboxd.url, 'POST', '/v1/claim', { body: { template: 'img', claim_ref: 'raw' } });
    expect(asked).toMatchObject({ status: 200, json: { redirect: MESH_PEERS } });
    expect(sandboxd.core.claimedCount).toBe(0);

    const direct = await call<{ id?: string }>(url, 'POST', '/v1/claim', { body: { template: 'img', claim_ref: 'a' } });
    expect(direct.status).toBe(200);
    expect(direct.body.id).toMatch(/^sb_/);
    const viaHono = await agent.app.request('/v1/claim', {
      method: 'POST',
      headers: { authorization: `Bearer ${FLEET_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ template: 'img', claim_ref: 'b' }),
    });
    expect(viaHono.status).toBe(200);
    expect(((await viaHono.json()) as { id?: string }).id).toMatch(/^sb_/);
    expect(sandboxd.core.list().map((row) => [row.claim_ref, row.key])).toEqual([
      ['a', { template: 'img', net: 'none', size: 'small' }],
      ['b', { template: 'img', net: 'none', size: 'small' }],
    ]);
  });

  it('answers a claim_ref lookup with that claim_ref only, when sandboxd ignores the filter (an older daemon)', async () => {
    const { sandboxd, url } = await nodeWith({ olderDaemon: true });
    for (const ref of ['mine', 'other-1', 'other-2'])
      expect((await call(url, 'POST', '/v1/claim', { body: { template: 'img', claim_ref: ref } })).status).toBe(200);
    // The daemon itself answers the whole list whatever the filter says.
    const raw = await call<SandboxList>(sandboxd.url, 'GET', '/v1/sandboxes?claim_ref=mine');
    expect(raw.body.sandboxes).toHaveLength(3);
    const all = await call<SandboxList>(url, 'GET', '/v1/sandboxes');
    expect(all.body.sandboxes).toHaveLength(3);
    const mine = await call<SandboxList>(url, 'GET', '/v1/sandboxes?claim_ref=mine');
    expect(mine.status).toBe(200);
    expect(mine.body.sandboxes.map((row) => row.claim_ref)).toEqual(['mine']);
    const none = await call<SandboxList>(url, 'GET', '/v1/sandboxes?claim_ref=nobody');
    expect(none.body.sandboxes).toEqual([]);
  });

  it('reads node claims recorded before claimed_at existed: rows without it pass, nothing is skipped', async () => {
    const { sandboxd, url } = await nodeWith({ omitClaimedAt: true });
    for (const ref of ['x', 'y'])
      expect((await call(url, 'POST', '/v1/claim', { body: { template: 'img', claim_ref: ref } })).status).toBe(200);
    const client = new SandboxdClient({ url: sandboxd.url, rootToken: FLEET_TOKEN, timeoutMs: 2_000 });
    open.push(() => client.close());
    const logger = recordingLogger();
    const rows = await nodeClaimsReader(client, logger)();
    expect(rows.map((r) => r.claim_ref).sort()).toEqual(['x', 'y']);
    expect(rows.every((r) => r.claimed_at === undefined)).toBe(true);
    expect(logger.warnings).toEqual([]);
  });

  it('passes a claim answer without owner_addr (no advertise address) and one with a full https origin on as they came', async () => {
    const unadvertised = await nodeWith({ advertise: false });
    const bare = await call<Record<string, unknown>>(unadvertised.url, 'POST', '/v1/claim', {
      body: { template: 'img' },
    });
    expect(bare.status).toBe(200);
    expect(bare.body).not.toHaveProperty('owner_addr');
    const origin = 'https://sbx.example.com:8443';
    const clientAdvertise = await nodeWith({ clientAdvertise: origin });
    const full = await call(clientAdvertise.url, 'POST', '/v1/claim', { body: { template: 'img' } });
    expect(full).toMatchObject({ status: 200, json: { owner_addr: origin } });
  });
});

describe("answers the fake cannot give (the harness's SandboxdVariant in front of a fake)", () => {
  // The real daemon honours no_redirect, and so does the fake: a redirect reaching the agent is a daemon that ignores it.
  it('passes a redirect answer on as it came (a 200 that claimed nothing)', async () => {
    const { sandboxd, url } = await standIn({ redirectClaims: ['10.0.0.6:7777'] });
    const answer = await call(url, 'POST', '/v1/claim', { body: { template: 'img', claim_ref: 'r' } });
    expect(answer).toMatchObject({ status: 200, json: { redirect: ['10.0.0.6:7777'] } });
    expect(sandboxd.core.claimedCount).toBe(0);
  });

  // template_digest, volumes and net_route come with promoted templates, volumes and newer daemons: the fake has none.
  it('passes a claim answer with extra fields through unchanged', async () => {
    const extras = { template_digest: 'sha256:abc', volumes: [{ name: 'v', mount: '/volumes/v' }], net_route: 'x' };
    const { url } = await standIn({ claimExtras: extras });
    const answer = await call(url, 'POST', '/v1/claim', { body: { template: 'img' } });
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject(extras);
  });

  // Every row the fake lists is whole: a broken one is the stand-in's.
  it('reads the node claims row by row: extra fields pass, a row without an id is skipped and logged once', async () => {
    const { variant, url } = await standIn({
      rowExtras: { hibernated: false, archived: false, volumes: [] },
      extraRows: [{ key: { template: 'img', net: 'none', size: 'small' }, deadline: '2030-01-01T00:00:00Z' }],
    });
    for (const ref of ['x', 'y'])
      expect((await call(url, 'POST', '/v1/claim', { body: { template: 'img', claim_ref: ref } })).status).toBe(200);
    const client = new SandboxdClient({ url: variant.url, rootToken: FLEET_TOKEN, timeoutMs: 2_000 });
    open.push(() => client.close());
    const logger = recordingLogger();
    const read = nodeClaimsReader(client, logger);
    const rows = await read();
    expect(rows.map((r) => r.claim_ref).sort()).toEqual(['x', 'y']);
    await read();
    expect(logger.warnings).toHaveLength(1);
    expect(logger.warnings[0]?.fields).toMatchObject({ skipped: 1 });
  });
});

describe("the agent's owner address", () => {
  const answer = (body: unknown) => ({
    status: 200,
    body: new TextEncoder().encode(JSON.stringify(body)),
    contentType: 'application/json',
  });

  it('is host:port when sandboxd names a full https origin (client_advertise)', () => {
    const owner = new OwnerAddress(silentLogger);
    owner.learnFromClaimAnswer(
      answer({ id: 'sb_1', token: 't', deadline: 'd', owner_addr: 'https://sbx.example.com:8443', volumes: [] }),
    );
    expect(owner.value).toBe('sbx.example.com:8443');
    owner.learnFromClaimAnswer(answer({ id: 'sb_2', token: 't', deadline: 'd', owner_addr: 'https://[fd00::5]' }));
    expect(owner.value).toBe('[fd00::5]:443');
  });

  it('follows every change of owner_addr, whichever of claim answers and info named it last', () => {
    const owner = new OwnerAddress(silentLogger);
    const seen: string[] = [];
    owner.onChange((value) => seen.push(value));
    const grant = (ownerAddr: string) => answer({ id: 'sb_1', token: 't', deadline: 'd', owner_addr: ownerAddr });
    owner.learnFromClaimAnswer(grant('10.0.0.5:7777'));
    owner.learnFromClaimAnswer(grant('10.0.0.5:7777'));
    expect(owner.value).toBe('10.0.0.5:7777');
    owner.learnFromClaimAnswer(grant('10.0.0.5:77770'));
    expect(owner.value).toBe('10.0.0.5:77770');
    owner.learnFromInfo({ pools: [], claimed: 0, owner_addr: '10.0.0.9:7777' });
    expect(owner.value).toBe('10.0.0.9:7777');
    // The same answer as before the info: it names the owner again.
    owner.learnFromClaimAnswer(grant('10.0.0.5:77770'));
    expect(owner.value).toBe('10.0.0.5:77770');
    // A nested owner_addr beside the top-level one: the top-level one counts, as JSON.parse reads it.
    owner.learnFromClaimAnswer(
      answer({
        id: 'sb_2',
        token: 't',
        deadline: 'd',
        owner_addr: '10.0.0.7:7777',
        meta: { owner_addr: '10.0.0.5:77770' },
      }),
    );
    expect(owner.value).toBe('10.0.0.7:7777');
    expect(seen).toEqual(['10.0.0.5:7777', '10.0.0.5:77770', '10.0.0.9:7777', '10.0.0.5:77770', '10.0.0.7:7777']);
  });

  it('learns nothing from a claim answer without owner_addr, or from a redirect', () => {
    const owner = new OwnerAddress(silentLogger);
    owner.learnFromClaimAnswer(answer({ id: 'sb_1', token: 't', deadline: 'd' }));
    owner.learnFromClaimAnswer(answer({ redirect: ['10.0.0.6:7777'] }));
    expect(owner.value).toBeUndefined();
  });
});

describe('a tenant token as the fleet token', () => {
  it("keeps the agent unready and says why (sandboxd's 403 to /v1/info), logged once", async () => {
    const tenantToken = 'team-a-token';
    const sandboxd = await startFakeSandboxd({ apiToken: FLEET_TOKEN, tenants: { 'team-a': tenantToken } });
    open.push(() => sandboxd.close());
    const logger = recordingLogger();
    const agent = createNodeAgent({ sandboxdUrl: sandboxd.url, token: tenantToken, pollIntervalMs: 20, logger });
    const { url } = await agent.start();
    open.push(() => agent.close());
    const why = 'the fleet token must be the root api_token (sandboxd answered 403 to /v1/info)';
    expect(agent.notReadyReasons()).toContain(why);
    const ready = await call<{ reason: string; reasons: string[] }>(url, 'GET', '/readyz', { token: null });
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ reason: 'NotReady', reasons: expect.arrayContaining([why]) });
    // Many polls later (one every 20 ms): still unready for that reason, and still one line saying so.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(agent.notReadyReasons()).toContain(why);
    expect(logger.warnings.filter((w) => JSON.stringify(w.fields).includes(why))).toHaveLength(1);
  });
});

describe('strict bodies at the agent', () => {
  // The bodies the agent forwards are seen through the stand-in (the fake, as the daemon, echoes no pool settings).
  it("passes sandboxd's pool settings warmpool supports through PUT /v1/pools, and refuses any other field", async () => {
    const { variant, url } = await standIn();
    const pool = {
      template: 'img',
      warm: 1,
      warm_max: 4,
      idle_hibernate_seconds: 60,
      archive_after_seconds: 600,
      archive_delete_after_seconds: 0,
    };
    expect((await call(url, 'PUT', '/v1/pools', { body: { generation: 1, pools: [pool] } })).status).toBe(200);
    expect(variant.poolsBodies).toEqual([{ pools: [{ ...pool, net: 'none', size: 'small' }] }]);

    const refused = await call(url, 'PUT', '/v1/pools', {
      body: { generation: 2, pools: [{ template: 'img', warm: 1, egress: { allow: ['x'] } }] },
    });
    expect(refused).toMatchObject({
      status: 400,
      body: {
        reason: 'UnsupportedField',
        error: 'unsupported field pools.0.egress: warmpool does not support it (refused, never dropped)',
      },
    });
    const top = await call(url, 'PUT', '/v1/pools', { body: { generation: 2, pools: [], force: true } });
    expect(top).toMatchObject({ status: 400, body: { reason: 'UnsupportedField', fields: ['force'] } });
    // sandboxd's own rules are the agent's too: a bad pool never costs the node its whole set.
    const rule = await call(url, 'PUT', '/v1/pools', {
      body: { generation: 2, pools: [{ template: 'img', net: 'egress', warm: 1, idle_hibernate_seconds: 30 }] },
    });
    expect(rule).toMatchObject({ status: 400, body: { reason: 'BadRequest' } });
    expect(variant.poolsBodies).toHaveLength(1);
  });

  it('refuses a renew with a field it does not support', async () => {
    const { url } = await nodeWith({});
    const claimed = await call<{ id: string }>(url, 'POST', '/v1/claim', { body: { template: 'img' } });
    const renew = await call(url, 'POST', `/v1/sandboxes/${claimed.body.id}/renew`, {
      body: { ttl_seconds: 60, keep_forever: true },
    });
    expect(renew).toMatchObject({ status: 400, body: { reason: 'UnsupportedField', fields: ['keep_forever'] } });
  });
});
