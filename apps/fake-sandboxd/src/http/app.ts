// The sandboxd HTTP contract (shared/specs/sandboxd-api.md) over a FakeSandboxd
// core: routes, auth, body rules and the documented status of every refusal.
import {
  claimRequestSchema,
  INVALID_BODY_MESSAGE,
  MAX_BODY_BYTES,
  renewRequestSchema,
  setPoolsRequestSchema,
  type ErrorBody,
} from '@warmpool/api';
import { bearerToken, readJsonBody, silentLogger, tokensEqual, type Logger } from '@warmpool/runtime';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { SandboxdRefusal, type RefusalReason } from '../core/errors.js';
import type { FakeSandboxd } from '../core/fake-sandboxd.js';
import { RootAuth } from './auth.js';
import { NodeMetrics } from './metrics.js';

const BODY = { maxBytes: MAX_BODY_BYTES, invalidMessage: INVALID_BODY_MESSAGE };

export interface SandboxdAppOptions {
  /** The node's root token; absent or empty = every caller is root (the real daemon's behaviour). */
  apiToken?: string;
  /** The root credential itself (wins over apiToken), for a caller that rotates it. */
  auth?: RootAuth;
  logger?: Logger;
}

const STATUS_OF: Record<RefusalReason, ContentfulStatusCode> = {
  draining: 429,
  'max-claims': 429,
  'no-room': 429,
  'provisioning-failed': 500,
  'not-found': 404,
  closed: 503,
};

const NOT_FOUND = 'sandbox not found';

function fail(c: Context, status: ContentfulStatusCode, error: string): Response {
  return c.json<ErrorBody>({ error }, status);
}

export function createSandboxdApp(core: FakeSandboxd, options: SandboxdAppOptions = {}): Hono {
  const auth = options.auth ?? new RootAuth(options.apiToken);
  const logger = options.logger ?? silentLogger;
  let metrics: NodeMetrics | undefined;
  const app = new Hono();

  const root: MiddlewareHandler = async (c, next) => {
    if (!auth.allows(bearerToken(c.req.header('authorization')))) return fail(c, 401, 'unauthorized');
    await next();
  };

  /** Root, or the bearer of this sandbox's own token. Anyone else learns nothing: 404. */
  const sandboxCaller = (c: Context): string | undefined => {
    const id = c.req.param('id') ?? '';
    const claim = core.get(id);
    if (claim === undefined) return undefined;
    const presented = bearerToken(c.req.header('authorization'));
    if (auth.allows(presented)) return id;
    return presented !== undefined && tokensEqual(presented, claim.token) ? id : undefined;
  };

  app.get('/healthz', (c) => c.text('ok'));

  app.put('/v1/pools', root, async (c) => {
    const body = await readJsonBody(c, setPoolsRequestSchema, BODY);
    if (!body.ok) return fail(c, 400, body.error);
    const info = core.setPools(body.value.pools);
    logger.info('pools set', { pools: info.pools.length });
    return c.json(info);
  });

  app.get('/v1/info', root, (c) => c.json(core.info()));

  app.post('/v1/claim', root, async (c) => {
    const body = await readJsonBody(c, claimRequestSchema, BODY);
    if (!body.ok) return fail(c, 400, body.error);
    try {
      return c.json(await core.claim(body.value));
    } catch (err) {
      if (err instanceof SandboxdRefusal) return fail(c, STATUS_OF[err.reason], err.message);
      throw err;
    }
  });

  app.get('/v1/sandboxes', root, (c) => c.json({ sandboxes: core.list(c.req.query('claim_ref')) }));

  app.get('/v1/sandboxes/:id', root, (c) => {
    const claim = core.get(c.req.param('id'));
    if (claim === undefined) return fail(c, 404, NOT_FOUND);
    // Root reached this handler, so the token may be shown (the retried-claim path needs it).
    return c.json(core.row(claim, true));
  });

  app.post('/v1/sandboxes/:id/release', (c) => {
    const id = sandboxCaller(c);
    if (id === undefined || !core.release(id)) return fail(c, 404, NOT_FOUND);
    return c.body(null, 204);
  });

  app.post('/v1/sandboxes/:id/renew', async (c) => {
    const id = sandboxCaller(c);
    if (id === undefined) return fail(c, 404, NOT_FOUND);
    const body = await readJsonBody(c, renewRequestSchema, { ...BODY, emptyAs: {} });
    if (!body.ok) return fail(c, 400, body.error);
    const granted = core.renew(id, body.value.ttl_seconds);
    return granted === undefined ? fail(c, 404, NOT_FOUND) : c.json(granted);
  });

  app.post('/v1/drain', root, (c) => {
    logger.info('draining');
    return c.json(core.drain());
  });

  app.delete('/v1/drain', root, (c) => {
    logger.info('drain lifted');
    return c.json(core.undrain());
  });

  app.get('/metrics', root, async (c) => {
    metrics ??= new NodeMetrics(core);
    return c.text(await metrics.render(), 200, { 'content-type': metrics.contentType });
  });

  app.notFound((c) => fail(c, 404, 'not found'));
  app.onError((err, c) => {
    logger.error('request failed', { err, path: c.req.path });
    return fail(c, 500, 'internal error');
  });
  return app;
}
