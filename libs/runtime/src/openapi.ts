// OpenAPI 3.1 documents whose body schemas are generated from the zod schemas
// that validate the wire (libs/api), so a document cannot drift from what a
// server accepts and answers. Each API writes only its route table; the
// schema generation and the document's frame live here, once.
import { z } from 'zod';

export type OpenApiJson = Record<string, unknown>;

/** A named body schema: `input` for what a server accepts (defaults optional), `output` for what it answers. */
export interface OpenApiComponent {
  schema: z.ZodType;
  io: 'input' | 'output';
}

export interface OpenApiSpec<Name extends string> {
  info: { title: string; version: string; description: string };
  /** The default security requirement of every operation (an operation's own `security` overrides it). */
  security: OpenApiJson[];
  securitySchemes: OpenApiJson;
  components: Record<Name, OpenApiComponent>;
  paths: OpenApiJson;
}

/** Builders for a route table over the component names `Name`. */
export interface OpenApiBuilders<Name extends string> {
  ref(name: Name): OpenApiJson;
  /** A response with a JSON body of the named schema. */
  json(name: Name, description: string): OpenApiJson;
  /** A response with a plain-text body. */
  text(description: string): OpenApiJson;
  /** A request body of the named schema. */
  body(name: Name, required?: boolean): OpenApiJson;
  op(operationId: string, summary: string, responses: OpenApiJson, extra?: OpenApiJson): OpenApiJson;
}

export function openApiBuilders<Name extends string>(): OpenApiBuilders<Name> {
  const ref = (name: Name): OpenApiJson => ({ $ref: `#/components/schemas/${name}` });
  return {
    ref,
    json: (name, description) => ({ description, content: { 'application/json': { schema: ref(name) } } }),
    text: (description) => ({ description, content: { 'text/plain': { schema: { type: 'string' } } } }),
    body: (name, required = true) => ({ required, content: { 'application/json': { schema: ref(name) } } }),
    op: (operationId, summary, responses, extra = {}) => ({ operationId, summary, responses, ...extra }),
  };
}

/** The document: the route table as given, every component schema generated from its zod schema. */
export function openApiDocument<Name extends string>(spec: OpenApiSpec<Name>): OpenApiJson {
  const schemas: Record<string, OpenApiJson> = {};
  for (const [name, { schema, io }] of Object.entries<OpenApiComponent>(spec.components)) {
    // Refinements (e.g. no duplicate keys) have no JSON Schema form; the server still enforces them.
    const generated = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as OpenApiJson;
    delete generated['$schema'];
    schemas[name] = generated;
  }
  return {
    openapi: '3.1.0',
    info: spec.info,
    security: spec.security,
    paths: spec.paths,
    components: { schemas, securitySchemes: spec.securitySchemes },
  };
}

/**
 * What a server serves at /openapi.json: the document for its own version,
 * built on first use and then kept (the route table and the schemas cannot
 * change within a process); any other version (a test's) is built fresh.
 */
export function servedDocument<Name extends string>(
  ownVersion: string,
  specOf: (version: string) => OpenApiSpec<Name>,
): (version?: string) => OpenApiJson {
  let built: OpenApiJson | undefined;
  return (version = ownVersion) =>
    version === ownVersion ? (built ??= openApiDocument(specOf(version))) : openApiDocument(specOf(version));
}

/** OpenAPI's `{param}` form of a Hono route path (`:param`). */
export function openApiPath(honoPath: string): string {
  return honoPath.replace(/:(\w+)/g, '{$1}');
}
