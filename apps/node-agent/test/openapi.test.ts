// GET /openapi.json: the agent API described from the same zod schemas that
// validate it, served without a token (it holds no secret).
import { afterEach, describe, expect, it } from 'vitest';
import { openApiDocument } from '../src/api/openapi.js';
import { call, startNode, type Node } from './helpers.js';

interface Document {
  openapi: string;
  info: { version: string };
  paths: Record<string, Record<string, { security?: unknown[]; responses: Record<string, unknown> }>>;
  components: {
    schemas: Record<
      string,
      {
        type?: string;
        required?: string[];
        properties?: Record<string, { type?: string; maxLength?: number; minimum?: number }>;
      }
    >;
  };
}

const open: Node[] = [];
afterEach(async () => {
  for (const n of open.splice(0)) await n.close();
});

describe("the agent's OpenAPI document", () => {
  it('is served at /openapi.json without a token, and documents exactly the routes the agent serves', async () => {
    const n = await startNode();
    open.push(n);
    const answer = await call<Document>(n.url, 'GET', '/openapi.json', { token: null });
    expect(answer.status).toBe(200);
    const doc = answer.body;
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toMatch(/^\d+\.\d+\.\d+/);
    const routes = Object.entries(doc.paths)
      .flatMap(([path, ops]) => Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`))
      .sort();
    // The same set the app serves, read from its own route table, so a new route cannot go undocumented.
    const served = n.agent.app.routes
      .filter((r) => r.method !== 'ALL')
      .map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}`);
    expect(routes).toEqual([...new Set(served)].sort());
    expect(routes).toEqual([
      'DELETE /v1/drain',
      'GET /healthz',
      'GET /metrics',
      'GET /openapi.json',
      'GET /readyz',
      'GET /v1/info',
      'GET /v1/sandboxes',
      'GET /v1/sandboxes/{id}',
      'POST /v1/claim',
      'POST /v1/claims',
      'POST /v1/drain',
      'POST /v1/sandboxes/{id}/release',
      'POST /v1/sandboxes/{id}/renew',
      'PUT /v1/pools',
    ]);
    for (const [route, ops] of Object.entries(doc.paths)) {
      for (const operation of Object.values(ops)) {
        if (route.startsWith('/v1/'))
          expect(Object.keys(operation.responses), route).toEqual(expect.arrayContaining(['401', '405', '503']));
      }
    }
  });

  it('carries the wire schemas themselves: required fields, bounds and types come from zod', () => {
    const { components } = openApiDocument('0.0.0-test') as unknown as Document;
    const claim = components.schemas['ClaimRequest'];
    expect(claim?.required).toContain('template');
    expect(claim?.properties?.['template']).toMatchObject({ type: 'string', maxLength: 253 });
    const setPools = components.schemas['SetPoolsRequest'];
    expect(setPools?.required).toEqual(expect.arrayContaining(['generation', 'pools']));
    expect(setPools?.properties?.['generation']).toMatchObject({ type: 'integer', minimum: 0 });
    expect(components.schemas['NodeInfo']?.required).toEqual(expect.arrayContaining(['pools', 'claimed']));
    // Every error body carries a machine-readable reason from a closed list.
    expect(components.schemas['Error']?.required).toEqual(expect.arrayContaining(['error', 'reason']));
    expect((components.schemas['Error']?.properties?.['reason'] as { enum?: string[] } | undefined)?.enum).toContain(
      'StaleGeneration',
    );
  });
});
