// The agent in front of a sandboxd that behaves as the real one does
// (cocoonstack/sandbox) where fake-sandboxd does not yet: a real fake-sandboxd
// behind the harness's SandboxdVariant, which answers redirects, adds fields,
// names its owner as a URL, drops claimed_at and ignores `?claim_ref=`.
import { type SandboxList } from '@warmpool/api';
import { startFakeSandboxd, type RunningFakeSandboxd } from '@warmpool/fake-sandboxd';
import { startSandboxdVariant, type SandboxdVariant } from '@warmpool/harness';
import { createNodeAgent, nodeClaimsReader, OwnerAddress, SandboxdClient, type NodeAgent } from '@warmpool/node-agent';
import { silentLogger, type Logger } from '@warmpool/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { call, FLEET_TOKEN } from './helpers.js';

interface Stack {
  sandboxd: RunningFakeSandboxd;
  variant: SandboxdVariant;
  agent: NodeAgent;
  url: string;
}

const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

async function stack(behaviour: SandboxdVariant['behaviour'] = {}): Promise<Stack> {
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

describe('the agent in front of a sandboxd that behaves like the real one', () => {
  it('forwards every claim with no_redirect: true, on the direct path and through Hono', async () => {
    const { variant, agent, url } = await stack();
    expect((await call(url, 'POST', '/v1/claim', { body: { template: 'img', claim_ref: 'a' } })).status).toBe(200);
    const viaHono = await agent.app.request('/v1/claim', {
      method: 'POST',
      headers: { authorization: `Bearer ${FLEET_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ template: 'img', claim_ref: 'b' }),
    });
    expect(viaHono.status).toBe(200);
    expect(variant.claimBodies).toEqual([
      { template: 'img', net: 'none', size: 'small', claim_ref: 'a', no_redirect: true },
      { template: 'img', net: 'none', size: 'small', claim_ref: 'b', no_redirect: true },
    ]);
  });

  it('passes a redirect answer on as it came (a 200 that claimed nothing)', async () => {
    const { sandboxd, url } = await stack({ redirectClaims: ['10.0.0.6:7777'] });
    const answer = await call(url, 'POST', '/v1/claim', { body: { template: 'img', claim_ref: 'r' } });
    expect(answer).toMatchObject({ status: 200, json: { redirect: ['10.0.0.6:7777'] } });
    expect(sandboxd.core.claimedCount).toBe(0);
  });

  it('passes a claim answer with extra fields through unchanged', async () => {
    const extras = { template_digest: 'sha256:abc', volumes: [{ name: 'v', mount: '/volumes/v' }], net_route: 'x' };
    const { url } = await stack({ claimExtras: extras });
    const answer = await call(url, 'POST', '/v1/claim', { body: { template: 'img' } });
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject(extras);
  });

  it('answers a claim_ref lookup with that claim_ref only, when sandboxd ignores the filter', async () => {
    const { variant, url } = await stack({ ignoreClaimRefFilter: true });
    for (const ref of ['mine', 'other-1', 'other-2'])
      expect((await call(url, 'POST', '/v1/claim', { body: { template: 'img', claim_ref: ref } })).status).toBe(200);
    const all = await call<SandboxList>(url, 'GET', '/v1/sandboxes');
    expect(all.body.sandboxes).toHaveLength(3);
    const mine = await call<SandboxList>(url, 'GET', '/v1/sandboxes?claim_ref=mine');
    expect(mine.status).toBe(200);
    expect(mine.body.sandboxes.map((row) => row.claim_ref)).toEqual(['mine']);
    // The daemon did answer the whole list: the filter is the agent's.
    expect(variant.calls).toContain('GET /v1/sandboxes');
    const none = await call<SandboxList>(url, 'GET', '/v1/sandboxes?claim_ref=nobody');
    expect(none.body.sandboxes).toEqual([]);
  });

  it('reads the node claims row by row: extra fields and no claimed_at pass, a row without an id is skipped and logged once', async () => {
    const { variant, url } = await stack({
      dropClaimedAt: true,
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
    expect(rows.every((r) => r.claimed_at === undefined)).toBe(true);
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

  it('learns nothing from a claim answer without owner_addr, or from a redirect', () => {
    const owner = new OwnerAddress(silentLogger);
    owner.learnFromClaimAnswer(answer({ id: 'sb_1', token: 't', deadline: 'd' }));
    owner.learnFromClaimAnswer(answer({ redirect: ['10.0.0.6:7777'] }));
    expect(owner.value).toBeUndefined();
  });
});

describe('a tenant token as the fleet token', () => {
  it("keeps the agent unready and says why (sandboxd's 403 to /v1/info), logged once", async () => {
    const sandboxd = await startFakeSandboxd({ apiToken: FLEET_TOKEN, coldBootMs: 5 });
    open.push(() => sandboxd.close());
    const variant = await startSandboxdVariant(sandboxd.url, { tenantToken: true });
    open.push(() => variant.close());
    const logger = recordingLogger();
    const agent = createNodeAgent({ sandboxdUrl: variant.url, token: FLEET_TOKEN, pollIntervalMs: 20, logger });
    const { url } = await agent.start();
    open.push(() => agent.close());
    const why = 'the fleet token must be the root api_token (sandboxd answered 403 to /v1/info)';
    expect(agent.notReadyReasons()).toContain(why);
    const ready = await call<{ reason: string; reasons: string[] }>(url, 'GET', '/readyz', { token: null });
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ reason: 'NotReady', reasons: expect.arrayContaining([why]) });
    // Many polls later: still one line saying so.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(variant.calls.filter((c) => c === 'GET /v1/info').length).toBeGreaterThan(3);
    expect(logger.warnings.filter((w) => JSON.stringify(w.fields).includes(why))).toHaveLength(1);
  });
});

describe('strict bodies at the agent', () => {
  it("passes sandboxd's pool settings warmpool supports through PUT /v1/pools, and refuses any other field", async () => {
    const { variant, url } = await stack();
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
    const { url } = await stack();
    const claimed = await call<{ id: string }>(url, 'POST', '/v1/claim', { body: { template: 'img' } });
    const renew = await call(url, 'POST', `/v1/sandboxes/${claimed.body.id}/renew`, {
      body: { ttl_seconds: 60, keep_forever: true },
    });
    expect(renew).toMatchObject({ status: 400, body: { reason: 'UnsupportedField', fields: ['keep_forever'] } });
  });
});
