// The sandboxd HTTP contract (docs/sandboxd.md) over a FakeSandboxd core:
// routes, the three token kinds (root, tenant, sandbox), body rules, and the
// documented status of every refusal. Requests no route takes are answered as
// Go's mux answers them (./go-mux.ts).
import {
  claimRequestSchema,
  INVALID_BODY_MESSAGE,
  MAX_BODY_BYTES,
  renewRequestSchema,
  strictSetPoolsRequestSchema,
  type ErrorBody,
} from '@warmpool/api';
import { bearerToken, readJsonBody, silentLogger, tokensEqual, type Logger } from '@warmpool/runtime';
import { Hono, type Context, type Handler, type MiddlewareHandler } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { SandboxdRefusal, type RefusalReason } from '../core/errors.js';
import type { FakeSandboxd } from '../core/fake-sandboxd.js';
import { RootAuth, type Caller } from './auth.js';
import { goMuxFallback } from './go-mux.js';
import { NodeMetrics } from './metrics.js';
import { mountRuntimeRoutes } from './runtime-routes.js';
import type { SandboxRuntimes } from '../core/runtime/runtimes.js';

const BODY = { maxBytes: MAX_BODY_BYTES, invalidMessage: INVALID_BODY_MESSAGE };

export interface SandboxdAppOptions {
  /** The node's root token; absent or empty (and no tenants) = every caller is root (the real daemon's behaviour). */
  apiToken?: string;
  /** Tenant name → token, when no `auth` is given. */
  tenants?: Readonly<Record<string, string>>;
  /** The credentials themselves (win over apiToken and tenants), for a caller that rotates the root token. */
  auth?: RootAuth;
  logger?: Logger;
  /** Serve the sandbox runtime contract (docs/sandbox-runtime.md) over these simulated runtimes. */
  runtimes?: SandboxRuntimes;
}

const STATUS_OF: Record<RefusalReason, ContentfulStatusCode> = {
  draining: 429,
  'max-claims': 429,
  'no-room': 429,
  'provisioning-failed': 500,
  'no-egress': 409,
  'not-found': 404,
  closed: 503,
};

/** The daemon's one answer for an unknown id and for a token that is not that sandbox's: nothing leaks. */
const UNKNOWN_SANDBOX = 'unknown sandbox';

type Env = { Variables: { caller: Caller } };

function fail(c: Context, status: ContentfulStatusCode, error: string): Response {
  return c.json<ErrorBody>({ error }, status);
}

function refused(c: Context, err: unknown): Response {
  if (err instanceof SandboxdRefusal) return fail(c, STATUS_OF[err.reason], err.message);
  throw err;
}

export function createSandboxdApp(core: FakeSandboxd, options: SandboxdAppOptions = {}): Hono<Env> {
  const auth =
    options.auth ?? new RootAuth(options.apiToken, { ...(options.tenants ? { tenants: options.tenants } : {}) });
  const logger = options.logger ?? silentLogger;
  let metrics: NodeMetrics | undefined;
  const app = new Hono<Env>();
  const route = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, ...handlers: Handler<Env>[]): void => {
    app.on(method, [path], ...handlers);
  };

  /** Root or a tenant: the resource-creating verbs and the tenant-scoped listing. */
  const nodeToken: MiddlewareHandler<Env> = async (c, next) => {
    const caller = auth.callerOf(bearerToken(c.req.header('authorization')));
    if (caller === undefined) return fail(c, 401, 'invalid api token');
    c.set('caller', caller);
    await next();
  };
  /** Operator surfaces: a tenant is authenticated but not authorized. */
  const rootOnly: MiddlewareHandler<Env> = async (c, next) => {
    const caller = auth.callerOf(bearerToken(c.req.header('authorization')));
    if (caller === undefined) return fail(c, 401, 'invalid api token');
    if (caller.kind !== 'root') return fail(c, 403, 'operator token required');
    c.set('caller', caller);
    await next();
  };
  const tenantOf = (c: Context<Env>): string | undefined => {
    const caller = c.get('caller');
    return caller.kind === 'tenant' ? caller.tenant : undefined;
  };

  /**
   * Sandbox-scoped verbs: the configured root token acts on any sandbox by id; any other token must be this
   * sandbox's own. No bearer at all is 401; a wrong one is 404, the same as an unknown id.
   */
  const sandboxScoped =
    (act: (c: Context<Env>, id: string) => Response | Promise<Response>): Handler<Env> =>
    (c) => {
      const presented = bearerToken(c.req.header('authorization'));
      if (presented === undefined) return fail(c, 401, 'missing bearer token');
      const id = c.req.param('id') ?? '';
      const claim = core.get(id);
      if (claim === undefined) return fail(c, 404, UNKNOWN_SANDBOX);
      if (!auth.isRootToken(presented) && !tokensEqual(presented, claim.token)) return fail(c, 404, UNKNOWN_SANDBOX);
      return act(c, id);
    };

  route('GET', '/healthz', (c) => c.text('ok'));

  route('PUT', '/v1/pools', rootOnly, async (c) => {
    // Strict, as the daemon decodes operator bodies: a mistyped field is a 400, and nothing applies unless all is valid.
    const body = await readJsonBody(c, strictSetPoolsRequestSchema, BODY);
    if (!body.ok) return fail(c, 400, body.error);
    try {
      const { trimmed } = core.replacePools(body.value.pools);
      logger.info('pools set', { pools: body.value.pools.length, trimmed });
      // The daemon answers once the VMs it trimmed are destroyed, with the info of that moment.
      await core.awaitTrim(trimmed);
      return c.json(core.info());
    } catch (err) {
      return refused(c, err);
    }
  });

  route('GET', '/v1/info', rootOnly, (c) => c.json(core.info()));

  route('POST', '/v1/claim', nodeToken, async (c) => {
    const body = await readJsonBody(c, claimRequestSchema, BODY);
    if (!body.ok) return fail(c, 400, body.error);
    try {
      return c.json(await core.claimOrRedirect(body.value, tenantOf(c)));
    } catch (err) {
      return refused(c, err);
    }
  });

  route('GET', '/v1/sandboxes', nodeToken, (c) =>
    c.json({ sandboxes: core.list(c.req.query('claim_ref'), tenantOf(c)) }),
  );

  route('GET', '/v1/sandboxes/:id', rootOnly, (c) => {
    const claim = core.get(c.req.param('id') ?? '');
    if (claim === undefined) return fail(c, 404, UNKNOWN_SANDBOX);
    // Only the configured root token is shown the sandbox's token; an open node never hands it out.
    return c.json(core.row(claim, auth.isRootToken(bearerToken(c.req.header('authorization')))));
  });

  route(
    'POST',
    '/v1/sandboxes/:id/release',
    sandboxScoped((c, id) => (core.release(id) ? c.body(null, 204) : fail(c, 404, UNKNOWN_SANDBOX))),
  );

  if (core.renews) {
    route(
      'POST',
      '/v1/sandboxes/:id/renew',
      sandboxScoped(async (c, id) => {
        const body = await readJsonBody(c, renewRequestSchema, { ...BODY, emptyAs: {} });
        if (!body.ok) return fail(c, 400, body.error);
        const granted = core.renew(id, body.value.ttl_seconds);
        return granted === undefined ? fail(c, 404, UNKNOWN_SANDBOX) : c.json(granted);
      }),
    );
  }

  route('POST', '/v1/drain', rootOnly, (c) => {
    logger.info('draining');
    return c.json(core.drain());
  });

  route('DELETE', '/v1/drain', rootOnly, (c) => {
    logger.info('drain lifted');
    return c.json(core.undrain());
  });

  if (options.runtimes !== undefined) mountRuntimeRoutes(app, core, options.runtimes);

  route('GET', '/metrics', rootOnly, async (c) => {
    metrics ??= new NodeMetrics(core, options.runtimes);
    return c.text(await metrics.render(), 200, { 'content-type': metrics.contentType });
  });

  app.notFound(goMuxFallback(app));
  app.onError((err, c) => {
    logger.error('request failed', { err, path: c.req.path });
    return fail(c, 500, 'internal error');
  });
  return app;
}
