// The discovery and OpenAPI documents, for any caller the front proxy names
// (kube-apiserver's discovery and kubectl read them before any Sandbox); the
// OpenAPI documents answer 304 to the ETag the client already holds.
import { AGENTS_GROUP } from '@warmpool/api';
import { Hono, type Context } from 'hono';
import type { RouteAccess } from '../http/access/route-access.js';
import type { SandboxApiEnv, SandboxVerb } from './access.js';
import {
  API_GROUP,
  API_GROUP_LIST,
  API_RESOURCE_LIST,
  OPENAPI_V2,
  OPENAPI_V2_ETAG,
  OPENAPI_V3_GROUP_VERSION,
  OPENAPI_V3_HASH,
  OPENAPI_V3_INDEX,
  OPENAPI_V3_PATH,
} from './discovery.js';
import { GROUP_VERSION_PATH } from './reads.js';
import { jsonResponse } from './responses.js';

export function discoveryRoutes(access: RouteAccess<SandboxApiEnv, SandboxVerb>): Hono<SandboxApiEnv> {
  const app = new Hono<SandboxApiEnv>();
  const documents: Record<string, unknown> = {
    '/apis': API_GROUP_LIST,
    [`/apis/${AGENTS_GROUP}`]: API_GROUP,
    [GROUP_VERSION_PATH]: API_RESOURCE_LIST,
    '/openapi/v3': OPENAPI_V3_INDEX,
  };
  for (const [path, document] of Object.entries(documents))
    app.get(path, access.authenticated, (c) => jsonResponse(c, 200, document));
  app.get('/openapi/v2', access.authenticated, (c) => cached(c, OPENAPI_V2, OPENAPI_V2_ETAG));
  app.get(`/openapi/v3/${OPENAPI_V3_PATH}`, access.authenticated, (c) =>
    cached(c, OPENAPI_V3_GROUP_VERSION, `"${OPENAPI_V3_HASH}"`),
  );
  return app;
}

function cached(c: Context, document: unknown, etag: string): Response {
  if (c.req.header('if-none-match') === etag) return c.body(null, 304, { etag });
  return jsonResponse(c, 200, document, { etag });
}
