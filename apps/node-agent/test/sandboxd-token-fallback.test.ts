// The agent's root token towards sandboxd across a rotation: a sandboxd that
// refuses the token the agent sent (it has not read the rotated Secret yet, or
// has already dropped the old token) gets the same call again with the other
// one, and the agent keeps presenting whichever sandboxd took.
import { serveApp, type HttpServer } from '@warmpool/runtime';
import { Hono } from 'hono';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SandboxdClient, type SandboxdAnswer } from '../src/index.js';

const INFO = { pools: [], claimed: 0 };

describe('SandboxdClient root token during a rotation', () => {
  let server: HttpServer;
  let accepts = new Set<string>();
  const presented: string[] = [];
  const clients: SandboxdClient[] = [];

  beforeAll(async () => {
    const app = new Hono();
    app.all('*', async (c) => {
      await c.req.text();
      const token = (c.req.header('authorization') ?? '').replace(/^Bearer /, '');
      presented.push(`${c.req.method} ${c.req.path} ${token}`);
      if (!accepts.has(token)) return c.json({ error: 'unauthorized' }, 401);
      if (c.req.path === '/v1/sandboxes') return c.json({ sandboxes: [] });
      return c.json(INFO);
    });
    server = await serveApp(app, { host: '127.0.0.1', port: 0 });
  });

  beforeEach(() => {
    presented.length = 0;
  });

  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await server.close();
  });

  function client(rootToken: string, rootTokenGraceMs: number): SandboxdClient {
    const made = new SandboxdClient({ url: server.url, rootToken, rootTokenGraceMs, timeoutMs: 5_000 });
    clients.push(made);
    return made;
  }

  const claim = (c: SandboxdClient): Promise<SandboxdAnswer> =>
    new Promise((resolve, reject) => c.claimInto('{"template":"img"}', { answer: resolve, failed: reject }));

  it('sends the call again with the replaced token when sandboxd has not read the new one, and sticks to it', async () => {
    accepts = new Set(['old']);
    const c = client('old', 60_000);
    c.setRootToken('new');
    expect((await claim(c)).status).toBe(200);
    expect((await c.info()).status).toBe(200);
    expect((await c.setPools('{"pools":[]}')).status).toBe(200);
    expect(presented).toEqual(['POST /v1/claim new', 'POST /v1/claim old', 'GET /v1/info old', 'PUT /v1/pools old']);
  });

  it('moves to the new token once sandboxd drops the old one', async () => {
    accepts = new Set(['old']);
    const c = client('old', 60_000);
    c.setRootToken('new');
    await c.info();
    accepts = new Set(['new']);
    presented.length = 0;
    expect((await c.info()).status).toBe(200);
    expect((await c.info()).status).toBe(200);
    expect(presented).toEqual(['GET /v1/info old', 'GET /v1/info new', 'GET /v1/info new']);
  });

  it('falls back for a streamed list too', async () => {
    accepts = new Set(['old']);
    const c = client('old', 60_000);
    c.setRootToken('new');
    const list = await c.listSandboxes();
    expect(list.status).toBe(200);
    expect(JSON.parse(await new Response(list.body as unknown as ReadableStream).text())).toEqual({ sandboxes: [] });
    expect(presented).toEqual(['GET /v1/sandboxes new', 'GET /v1/sandboxes old']);
  });

  it("passes sandboxd's 401 through when neither token is taken, or when there is no grace", async () => {
    accepts = new Set(['something-else']);
    const rotating = client('old', 60_000);
    rotating.setRootToken('new');
    expect((await claim(rotating)).status).toBe(401);
    expect(presented).toEqual(['POST /v1/claim new', 'POST /v1/claim old']);
    presented.length = 0;
    accepts = new Set(['old']);
    const noGrace = client('old', 0);
    noGrace.setRootToken('new');
    expect((await noGrace.info()).status).toBe(401);
    expect(presented).toEqual(['GET /v1/info new']);
  });

  it("never retries a call made with a sandbox's own token", async () => {
    accepts = new Set(['old']);
    const c = client('old', 60_000);
    c.setRootToken('new');
    expect((await c.release('sb_1', 'Bearer sandbox-token')).status).toBe(401);
    expect(presented).toEqual(['POST /v1/sandboxes/sb_1/release sandbox-token']);
  });
});
