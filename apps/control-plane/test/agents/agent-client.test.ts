// The HTTP PoolSetter against a scripted agent on loopback.
import { serveApp, type HttpServer } from '@warmpool/runtime';
import { Hono } from 'hono';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { AgentClient } from '../../src/agents/client.js';
import { AgentCallError, NoTokenError, StaleGenerationError } from '../../src/agents/errors.js';
import type { AgentNode } from '../../src/agents/pool-setter.js';

interface Seen {
  method: string;
  path: string;
  authorization: string | undefined;
  body: unknown;
}

const INFO = {
  pools: [{ key: { template: 'img', net: 'none', size: 'small' }, warm: 0, refilling: 2, target: 2 }],
  claimed: 0,
};

describe('AgentClient', () => {
  let server: HttpServer;
  let node: AgentNode;
  const seen: Seen[] = [];
  let script: Array<() => Response | Promise<Response>> = [];

  beforeAll(async () => {
    const app = new Hono();
    app.all('*', async (c) => {
      const text = await c.req.text();
      seen.push({
        method: c.req.method,
        path: c.req.path,
        authorization: c.req.header('authorization'),
        body: text === '' ? undefined : JSON.parse(text),
      });
      const next = script.shift();
      return next === undefined ? c.json(INFO) : next();
    });
    server = await serveApp(app, { host: '127.0.0.1', port: 0 });
    node = { name: 'node-a', address: `127.0.0.1:${server.address.port}` };
  });

  beforeEach(() => {
    seen.length = 0;
    script = [];
  });

  afterAll(async () => {
    await server.close();
  });

  const json = (status: number, body: unknown) => () =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

  it("PUTs the generation and the whole set with the fleet token, and answers the node's info", async () => {
    const setter = new AgentClient({ token: () => 'fleet' });
    const info = await setter.setPools(node, 42, [{ template: 'img', net: 'none', size: 'small', warm: 2 }]);
    expect(info).toEqual(INFO);
    expect(seen).toEqual([
      {
        method: 'PUT',
        path: '/v1/pools',
        authorization: 'Bearer fleet',
        body: { generation: 42, pools: [{ template: 'img', net: 'none', size: 'small', warm: 2 }] },
      },
    ]);
    await setter.close();
  });

  it('retries 5xx answers with backoff and succeeds', async () => {
    script = [json(503, { error: 'not recovered yet' }), json(500, { error: 'boom' })];
    const setter = new AgentClient({ token: () => 'fleet', retryInitialMs: 5 });
    await expect(setter.setPools(node, 1, [])).resolves.toEqual(INFO);
    expect(seen).toHaveLength(3);
    expect(new Set(seen.map((s) => (s.body as { generation: number }).generation))).toEqual(new Set([1]));
    await setter.close();
  });

  it('gives up after its attempts, with the last answer in the error', async () => {
    script = [json(502, { error: 'a' }), json(502, { error: 'b' }), json(502, { error: 'c' })];
    const setter = new AgentClient({ token: () => 'fleet', retryInitialMs: 1, attempts: 3 });
    const err = await setter.setPools(node, 1, []).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentCallError);
    expect((err as AgentCallError).message).toContain('answered 502: c');
    expect(seen).toHaveLength(3);
    await setter.close();
  });

  it('does not retry a 4xx: another attempt would get the same answer', async () => {
    script = [json(401, { error: 'unauthorized' })];
    const setter = new AgentClient({ token: () => 'wrong', retryInitialMs: 1 });
    const err = await setter.setPools(node, 1, []).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 401, retriable: false });
    expect(seen).toHaveLength(1);
    await setter.close();
  });

  it("turns a 409 into a StaleGenerationError carrying the node's applied generation", async () => {
    script = [json(409, { error: 'generation 3 is older than the applied generation 9', appliedGeneration: 9 })];
    const setter = new AgentClient({ token: () => 'fleet' });
    const err = await setter.setPools(node, 3, []).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StaleGenerationError);
    expect((err as StaleGenerationError).appliedGeneration).toBe(9);
    expect(seen).toHaveLength(1);
    await setter.close();
  });

  it('abandons a push that gets no answer within the push timeout, and does not resend it (the node is still on it)', async () => {
    script = [() => new Promise<Response>((resolve) => setTimeout(() => resolve(new Response('{}')), 500))];
    const setter = new AgentClient({ token: () => 'fleet', timeoutMs: 50, pushTimeoutMs: 100, retryInitialMs: 1 });
    const err = await setter.setPools(node, 1, []).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'AgentCallError', retriable: false });
    expect(String(err)).toContain('no answer within 100 ms');
    expect(seen).toHaveLength(1);
    await setter.close();
  });

  it('waits for a slow push up to the push timeout, longer than a probe waits', async () => {
    script = [() => new Promise<Response>((resolve) => setTimeout(() => resolve(json(200, INFO)()), 300))];
    const setter = new AgentClient({ token: () => 'fleet', timeoutMs: 100, pushTimeoutMs: 2_000 });
    await expect(setter.setPools(node, 1, [])).resolves.toEqual(INFO);
    expect(seen).toHaveLength(1);
    await setter.close();
  });

  it('does not resend a push the agent answered 504 OutcomeUnknown (sandboxd may still be applying it)', async () => {
    script = [json(504, { error: 'sandboxd did not answer within 50000 ms', reason: 'OutcomeUnknown' })];
    const setter = new AgentClient({ token: () => 'fleet', retryInitialMs: 1 });
    const err = await setter.setPools(node, 1, []).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'AgentCallError', retriable: false, status: 504 });
    expect(seen).toHaveLength(1);
    await setter.close();
  });

  it('reports an unreachable agent as a retriable failure', async () => {
    const setter = new AgentClient({ token: () => 'fleet', attempts: 2, retryInitialMs: 1 });
    const err = await setter.setPools({ name: 'gone', address: '127.0.0.1:1' }, 1, []).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'AgentCallError', retriable: true });
    await setter.close();
  });

  it('never calls an agent without a token (fail-closed)', async () => {
    const setter = new AgentClient({ token: () => undefined });
    await expect(setter.setPools(node, 1, [])).rejects.toBeInstanceOf(NoTokenError);
    await expect(setter.info(node)).rejects.toBeInstanceOf(NoTokenError);
    expect(seen).toHaveLength(0);
    await setter.close();
  });

  it('stops retrying when its signal aborts', async () => {
    script = [json(503, {}), json(503, {}), json(503, {})];
    const setter = new AgentClient({ token: () => 'fleet', retryInitialMs: 200, attempts: 3 });
    const controller = new AbortController();
    const call = setter.setPools(node, 1, [], { signal: controller.signal }).catch((e: unknown) => e);
    setTimeout(() => controller.abort(), 50);
    expect(await call).toBeInstanceOf(AgentCallError);
    expect(seen).toHaveLength(1);
    await setter.close();
  });

  it('probes with one GET /v1/info', async () => {
    script = [json(503, {})];
    const setter = new AgentClient({ token: () => 'fleet' });
    await expect(setter.info(node)).rejects.toMatchObject({ status: 503 });
    await expect(setter.info(node)).resolves.toEqual(INFO);
    expect(seen.map((s) => `${s.method} ${s.path}`)).toEqual(['GET /v1/info', 'GET /v1/info']);
    await setter.close();
  });

  it('never makes a push wait behind a probe to the same agent: each has its own connection', async () => {
    let answerProbe: (() => void) | undefined;
    script = [
      () =>
        new Promise<Response>((resolve) => {
          answerProbe = () => resolve(json(200, INFO)());
        }),
    ];
    const setter = new AgentClient({ token: () => 'fleet' });
    const probe = setter.info(node);
    await vi.waitFor(() => expect(answerProbe).toBeDefined());
    await expect(setter.setPools(node, 7, [])).resolves.toEqual(INFO);
    answerProbe?.();
    await expect(probe).resolves.toEqual(INFO);
    expect(seen.map((s) => `${s.method} ${s.path}`)).toEqual(['GET /v1/info', 'PUT /v1/pools']);
    await setter.close();
  });
});
