import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openApiBuilders, openApiPath, servedDocument, type OpenApiSpec } from '../src/index.js';

const COMPONENTS = { Thing: { schema: z.object({ name: z.string() }), io: 'output' as const } };
const { json, op } = openApiBuilders<keyof typeof COMPONENTS>();

function specOf(version: string): OpenApiSpec<keyof typeof COMPONENTS> {
  return {
    info: { title: 'things', version, description: 'a test API' },
    security: [],
    securitySchemes: {},
    components: COMPONENTS,
    paths: { '/things': { get: op('getThing', 'A thing', { '200': json('Thing', 'the thing') }) } },
  };
}

describe('servedDocument', () => {
  it("builds the server's own version once and serves that same document after", () => {
    let builds = 0;
    const document = servedDocument('1.2.3', (version) => (builds++, specOf(version)));
    const first = document();
    expect(document()).toBe(first);
    expect(builds).toBe(1);
    expect(first['info']).toMatchObject({ version: '1.2.3' });
  });

  it('builds any other version fresh, leaving the kept one alone', () => {
    const document = servedDocument('1.2.3', specOf);
    const own = document();
    expect(document('0.0.0-test')['info']).toMatchObject({ version: '0.0.0-test' });
    expect(document()).toBe(own);
  });

  it('generates each component schema from its zod schema', () => {
    const schemas = (servedDocument('1', specOf)()['components'] as { schemas: Record<string, unknown> }).schemas;
    expect(schemas['Thing']).toMatchObject({ type: 'object', properties: { name: { type: 'string' } } });
  });
});

describe('openApiPath', () => {
  it("writes Hono's :param as OpenAPI's {param}", () => {
    expect(openApiPath('/v1/namespaces/:namespace/claims/:id')).toBe('/v1/namespaces/{namespace}/claims/{id}');
  });
});
