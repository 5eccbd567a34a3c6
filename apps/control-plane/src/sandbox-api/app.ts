// The Sandbox API as a Hono app: health checks (open), discovery and OpenAPI
// (any caller the front proxy names), get / list / watch and create / delete
// of sandboxes (a SubjectAccessReview per request), each route's access
// declared where it is added (./access.ts). A path it does not serve answers
// a Status: 405 when the path is served with other methods, else 404.
import { messageOf, methodNotAllowed, type Logger } from '@warmpool/runtime';
import { Hono, type Context } from 'hono';
import { getPath } from 'hono/utils/url';
import { ClaimFailure } from '../provisioning/claim-service.js';
import { sandboxAccess, type SandboxApiEnv, type SandboxAuthorizer } from './access.js';
import { discoveryRoutes } from './discovery-routes.js';
import { apiErrorOf } from './failures.js';
import type { RequestHeaderConfig } from '../http/access/front-proxy.js';
import type { SandboxApiMetrics } from './metrics.js';
import { readRoutes, type ReadOptions } from './reads.js';
import { ApiError, statusResponse } from './responses.js';
import { writeRoutes, type WriteOptions } from './writes.js';

export interface SandboxApiAppOptions extends ReadOptions, WriteOptions {
  /** The front proxy's settings; undefined until read (then every request but the health checks is 503). */
  requestHeaders: () => RequestHeaderConfig | undefined;
  authorizer: SandboxAuthorizer;
  metrics?: SandboxApiMetrics | undefined;
  logger: Logger;
}

export function createSandboxApiApp(options: SandboxApiAppOptions): Hono<SandboxApiEnv> {
  const access = sandboxAccess(options.requestHeaders, options.authorizer);
  // A trailing slash names the same path, as the apiserver reads it.
  const app = new Hono<SandboxApiEnv>({ getPath: (request) => getPath(request).replace(/\/+$/, '') || '/' });
  app.use(
    '*',
    access.aroundEvery(async (c, next) => {
      const started = performance.now();
      await next();
      // Watches are counted when they end (watch.ts).
      const verb = c.get('verb');
      if (verb !== undefined && verb !== 'watch')
        options.metrics?.request(verb, c.res.status, (performance.now() - started) / 1000);
    }),
  );
  const ok = (c: Context): Response => c.text('ok', 200);
  app
    .get('/healthz', access.open, ok)
    .get('/livez', access.open, ok)
    .get('/readyz', access.open, (c) => {
      const reasons = options.notReadyReasons();
      return reasons.length === 0 ? ok(c) : c.text(reasons.join('\n'), 503);
    })
    .route('/', discoveryRoutes(access))
    .route('/', readRoutes(access, options))
    .route('/', writeRoutes(access, options));
  const allowed = methodNotAllowed(app.routes);
  app.all('*', access.authenticated, (c) => {
    const allow = allowed(c.req.path);
    const error =
      allow !== undefined
        ? new ApiError(
            'MethodNotAllowed',
            `the server does not allow this method on the requested resource (${c.req.method}); sandboxes support get, list, watch, create, delete`,
          )
        : new ApiError('NotFound', `the server could not find the requested resource (${c.req.method} ${c.req.path})`);
    const answer = statusResponse(c, error);
    if (allow !== undefined) answer.headers.set('allow', allow);
    return answer;
  });
  app.onError((err, c) => {
    if (!(err instanceof ApiError) && !(err instanceof ClaimFailure))
      options.logger.error('Sandbox API request failed', {
        method: c.req.method,
        path: c.req.path,
        err: messageOf(err),
      });
    return statusResponse(c, apiErrorOf(err));
  });
  access.assertDeclared(app);
  return app;
}
