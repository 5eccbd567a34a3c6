// Deny by default: every route the agent registers has a declared access
// (ROUTE_ACCESS), and every one that is not declared open refuses a caller
// without the fleet token, on both ways a request can arrive (over HTTP, where
// the claim takes its direct path, and through app.request()).
import { createNodeAgent } from '@warmpool/node-agent';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_TOKEN_MESSAGE, ROUTE_ACCESS } from '../src/api/auth.js';
import { openApiDocument } from '../src/api/openapi.js';
import { startNode, type Node } from './helpers.js';

/** A concrete request path for a route pattern (`:id` → a well-formed sandbox id). */
const concrete = (path: string): string => path.replaceAll(':id', 'sb_access_test');

describe('the agent API access table', () => {
  let node: Node;
  beforeAll(async () => {
    node = await startNode();
  });
  afterAll(async () => {
    await node?.close();
  });

  const routes = (): Array<{ method: string; path: string }> =>
    node.agent.app.routes.map(({ method, path }) => ({ method, path }));

  it('declares every route the app serves, and serves every route it declares', () => {
    const served = routes()
      .map(({ method, path }) => `${method} ${path}`)
      .sort();
    expect(served).toEqual([...ROUTE_ACCESS.keys()].sort());
  });

  it('declares only health, readiness, metrics and the API document open', () => {
    const open = [...ROUTE_ACCESS]
      .filter(([, access]) => access === 'open')
      .map(([route]) => route)
      .sort();
    expect(open).toEqual(['GET /healthz', 'GET /metrics', 'GET /openapi.json', 'GET /readyz']);
  });

  it('documents in /openapi.json the access each route declares', () => {
    const paths = openApiDocument()['paths'] as Record<
      string,
      Record<string, { security: Array<Record<string, string[]>> }>
    >;
    for (const [route, access] of ROUTE_ACCESS) {
      const [method = '', path = ''] = route.split(' ');
      const security = paths[path.replaceAll(':id', '{id}')]?.[method.toLowerCase()]?.security;
      const schemes = (security ?? []).flatMap((requirement) => Object.keys(requirement)).sort();
      expect(schemes.length === 0 ? 'open' : schemes.length === 1 ? 'root' : 'sandbox-or-root', route).toBe(access);
    }
  });

  it('refuses a missing token with 401 on every route not declared open, over HTTP and through app.request()', async () => {
    for (const { method, path } of routes()) {
      const access = ROUTE_ACCESS.get(`${method} ${path}`);
      const viaHttp = await fetch(node.url + concrete(path), { method });
      const viaHono = await node.agent.app.request(concrete(path), { method });
      for (const [how, res] of [
        ['HTTP', viaHttp],
        ['app.request()', viaHono],
      ] as const) {
        await res.body?.cancel();
        if (access === 'open') {
          expect(res.status, `${method} ${path} (${how}) is open`).not.toBe(401);
        } else {
          expect(res.status, `${method} ${path} (${how}) without a token`).toBe(401);
          expect(res.headers.get('www-authenticate'), `${method} ${path} (${how})`).toBe('Bearer');
        }
      }
    }
  });

  it('refuses a wrong token with 401 on every root route', async () => {
    for (const { method, path } of routes().filter((r) => ROUTE_ACCESS.get(`${r.method} ${r.path}`) === 'root')) {
      const res = await fetch(node.url + concrete(path), {
        method,
        headers: { authorization: 'Bearer not-the-fleet-token' },
      });
      await res.body?.cancel();
      expect(res.status, `${method} ${path} with a wrong token`).toBe(401);
    }
  });

  it('without a fleet token configured, answers 503 on every route not declared open (fail-closed)', async () => {
    const agent = createNodeAgent({ sandboxdUrl: node.sandboxd.url, pollIntervalMs: 60_000 });
    for (const { method, path } of agent.app.routes) {
      if (ROUTE_ACCESS.get(`${method} ${path}`) === 'open') continue;
      const res = await agent.app.request(concrete(path), { method, headers: { authorization: 'Bearer anything' } });
      expect(res.status, `${method} ${path}`).toBe(503);
      expect(((await res.json()) as { error: string }).error).toBe(NO_TOKEN_MESSAGE);
    }
    await agent.close();
  });
});
