// Who may call a sandboxd route, declared on the route itself: the node's
// token (root or a tenant), the operator's (root only), or the sandbox's own.
// Every refusal answers with the status docs/sandboxd.md documents.
import type { ErrorBody } from '@warmpool/api';
import { bearerToken, tokensEqual } from '@warmpool/runtime';
import type { Context, Handler, MiddlewareHandler } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { SandboxdRefusal, type RefusalReason } from '../core/errors.js';
import type { FakeSandboxd } from '../core/fake-sandboxd.js';
import type { Caller, RootAuth } from './auth.js';

export type Env = { Variables: { caller: Caller } };

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
export const UNKNOWN_SANDBOX = 'unknown sandbox';

export function fail(c: Context, status: ContentfulStatusCode, error: string): Response {
  return c.json<ErrorBody>({ error }, status);
}

/** The documented answer to a refusal of the core; anything else is rethrown (a 500). */
export function refused(c: Context, err: unknown): Response {
  if (err instanceof SandboxdRefusal) return fail(c, STATUS_OF[err.reason], err.message);
  throw err;
}

/** Root or a tenant: the resource-creating verbs and the tenant-scoped listing. */
export function nodeToken(auth: RootAuth): MiddlewareHandler<Env> {
  return async (c, next) => {
    const caller = auth.callerOf(bearerToken(c.req.header('authorization')));
    if (caller === undefined) return fail(c, 401, 'invalid api token');
    c.set('caller', caller);
    await next();
  };
}

/** Operator surfaces: a tenant is authenticated but not authorized. */
export function rootOnly(auth: RootAuth): MiddlewareHandler<Env> {
  return async (c, next) => {
    const caller = auth.callerOf(bearerToken(c.req.header('authorization')));
    if (caller === undefined) return fail(c, 401, 'invalid api token');
    if (caller.kind !== 'root') return fail(c, 403, 'operator token required');
    c.set('caller', caller);
    await next();
  };
}

/** The tenant a node-token caller acts for; undefined for root. */
export function tenantOf(c: Context<Env>): string | undefined {
  const caller = c.get('caller');
  return caller.kind === 'tenant' ? caller.tenant : undefined;
}

/**
 * Sandbox-scoped verbs: the configured root token acts on any sandbox by id; any other token must be this
 * sandbox's own. No bearer at all is 401; a wrong one is 404, the same as an unknown id.
 */
export function sandboxScoped(
  core: FakeSandboxd,
  auth: RootAuth,
  act: (c: Context<Env>, id: string) => Response | Promise<Response>,
): Handler<Env> {
  return (c) => {
    const presented = bearerToken(c.req.header('authorization'));
    if (presented === undefined) return fail(c, 401, 'missing bearer token');
    const id = c.req.param('id') ?? '';
    const claim = core.get(id);
    if (claim === undefined) return fail(c, 404, UNKNOWN_SANDBOX);
    if (!auth.isRootToken(presented) && !tokensEqual(presented, claim.token)) return fail(c, 404, UNKNOWN_SANDBOX);
    return act(c, id);
  };
}
