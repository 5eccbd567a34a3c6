// The claim and the sandbox verbs: claim (node token), listing (node token,
// tenant-scoped), one sandbox's row (root), release and renew (root or the
// sandbox's own token).
import { claimRequestSchema, INVALID_BODY_MESSAGE, MAX_BODY_BYTES, renewRequestSchema } from '@warmpool/api';
import { bearerToken, readJsonBody } from '@warmpool/runtime';
import { Hono } from 'hono';
import type { FakeSandboxd } from '../core/fake-sandboxd.js';
import { fail, nodeToken, refused, rootOnly, sandboxScoped, tenantOf, UNKNOWN_SANDBOX, type Env } from './access.js';
import type { RootAuth } from './auth.js';

const BODY = { maxBytes: MAX_BODY_BYTES, invalidMessage: INVALID_BODY_MESSAGE };

/** `POST /v1/claim`, `GET /v1/sandboxes`, `GET /v1/sandboxes/:id`. */
export function claimsApp(core: FakeSandboxd, auth: RootAuth): Hono<Env> {
  const node = nodeToken(auth);
  return new Hono<Env>()
    .on('POST', ['/v1/claim'], node, async (c) => {
      const body = await readJsonBody(c, claimRequestSchema, BODY);
      if (!body.ok) return fail(c, 400, body.error);
      try {
        return c.json(await core.claimOrRedirect(body.value, tenantOf(c)));
      } catch (err) {
        return refused(c, err);
      }
    })
    .on('GET', ['/v1/sandboxes'], node, (c) => c.json({ sandboxes: core.list(c.req.query('claim_ref'), tenantOf(c)) }))
    .on('GET', ['/v1/sandboxes/:id'], rootOnly(auth), (c) => {
      const claim = core.get(c.req.param('id') ?? '');
      if (claim === undefined) return fail(c, 404, UNKNOWN_SANDBOX);
      // Only the configured root token is shown the sandbox's token; an open node never hands it out.
      return c.json(core.row(claim, auth.isRootToken(bearerToken(c.req.header('authorization')))));
    });
}

/** `POST /v1/sandboxes/:id/release`, and `.../renew` when the core renews (an older daemon has no renew route). */
export function sandboxVerbsApp(core: FakeSandboxd, auth: RootAuth): Hono<Env> {
  const app = new Hono<Env>().on(
    'POST',
    ['/v1/sandboxes/:id/release'],
    sandboxScoped(core, auth, (c, id) => (core.release(id) ? c.body(null, 204) : fail(c, 404, UNKNOWN_SANDBOX))),
  );
  if (!core.renews) return app;
  return app.on(
    'POST',
    ['/v1/sandboxes/:id/renew'],
    sandboxScoped(core, auth, async (c, id) => {
      const body = await readJsonBody(c, renewRequestSchema, { ...BODY, emptyAs: {} });
      if (!body.ok) return fail(c, 400, body.error);
      const granted = core.renew(id, body.value.ttl_seconds);
      return granted === undefined ? fail(c, 404, UNKNOWN_SANDBOX) : c.json(granted);
    }),
  );
}
