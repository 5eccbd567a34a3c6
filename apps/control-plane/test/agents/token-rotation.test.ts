// The control plane across a fleet token rotation: it reads the new token at
// its own moment, before or after each agent, and must not lose a push or a
// probe over it. An agent here accepts whichever tokens the test says it has
// read (and, as the real agent, the one it replaced during its grace).
import { serveApp, TokenRotation, type HttpServer } from '@warmpool/runtime';
import { Hono } from 'hono';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AgentClient } from '../../src/agents/client.js';
import type { AgentNode } from '../../src/agents/pool-setter.js';
import { rotatingToken } from '../../src/agents/token.js';

const INFO = { pools: [], claimed: 0 };

describe('AgentClient across a token rotation', () => {
  let server: HttpServer;
  let node: AgentNode;
  let agentAccepts = new Set<string>();
  const presented: string[] = [];

  beforeAll(async () => {
    const app = new Hono();
    app.all('*', (c) => {
      const token = (c.req.header('authorization') ?? '').replace(/^Bearer /, '');
      presented.push(token);
      return agentAccepts.has(token) ? c.json(INFO) : c.json({ error: 'missing or invalid bearer token' }, 401);
    });
    server = await serveApp(app, { host: '127.0.0.1', port: 0 });
    node = { name: 'node-a', address: `127.0.0.1:${server.address.port}` };
  });

  beforeEach(() => {
    presented.length = 0;
  });

  afterAll(async () => {
    await server.close();
  });

  function controlPlaneTokens(first: string): TokenRotation<string> {
    return new TokenRotation<string>(first, { graceMs: 60_000, derive: (token) => token });
  }

  it('falls back to the replaced token while the agent has not read the new one, and keeps presenting what worked', async () => {
    const rotation = controlPlaneTokens('old');
    const setter = new AgentClient({ token: rotatingToken(rotation), attempts: 1 });
    agentAccepts = new Set(['old']);
    rotation.set('new');
    await expect(setter.setPools(node, 1, [])).resolves.toEqual(INFO);
    expect(presented).toEqual(['new', 'old']);
    await expect(setter.info(node)).resolves.toEqual(INFO);
    expect(presented).toEqual(['new', 'old', 'old']);
    // The agent reads the new token, and later its grace for the old one ends.
    agentAccepts = new Set(['new']);
    await expect(setter.setPools(node, 2, [])).resolves.toEqual(INFO);
    await expect(setter.setPools(node, 3, [])).resolves.toEqual(INFO);
    expect(presented).toEqual(['new', 'old', 'old', 'old', 'new', 'new']);
    await setter.close();
  });

  it('still answers a 401 when neither token is taken: a wrong token is not retried for ever', async () => {
    const rotation = controlPlaneTokens('old');
    const setter = new AgentClient({ token: rotatingToken(rotation), attempts: 3, retryInitialMs: 1 });
    agentAccepts = new Set(['something-else']);
    rotation.set('new');
    await expect(setter.setPools(node, 1, [])).rejects.toMatchObject({ status: 401, retriable: false });
    expect(presented).toEqual(['new', 'old']);
    await setter.close();
  });

  it('presents only the token it has without a rotation', async () => {
    const setter = new AgentClient({ token: rotatingToken(controlPlaneTokens('only')), attempts: 1 });
    agentAccepts = new Set(['other']);
    await expect(setter.info(node)).rejects.toMatchObject({ status: 401 });
    expect(presented).toEqual(['only']);
    await setter.close();
  });
});
