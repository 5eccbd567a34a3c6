// The sandbox verbs passed through to sandboxd: claim and the batch claim (claim-endpoint.ts),
// release, renew, list (filtered by claim_ref here too) and get. Sandbox ids never reach sandboxd unless
// they are plain.
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { agentRenewRequestSchema, claimRequestSchema } from '@warmpool/api';
import { readJsonBody } from '@warmpool/runtime';
import { Hono, type Context } from 'hono';
import type { SandboxdClient } from '../sandboxd/client.js';
import { errorResponse, jsonResponse, passThrough, toResponse } from './responses.js';
import { BODY, bodyRefused, type Handler, type Routes } from './route.js';
import { ANY_JSON, parseBody } from './strict-body.js';

/** Sandbox ids are opaque but plain (sandboxd's look like `sb_…`); anything else never reaches sandboxd. */
const SANDBOX_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const claimRefSchema = claimRequestSchema.shape.claim_ref.unwrap();

function sandboxId(c: Context): string | Response {
  const id = c.req.param('id') ?? '';
  return SANDBOX_ID.test(id) ? id : errorResponse(400, 'BadRequest', 'invalid sandbox id');
}

/** The sandbox verbs; `claim` holds POST /v1/claim's and POST /v1/claims' routes (claim-endpoint.ts). */
export function sandboxesApp(
  routes: Routes,
  deps: { sandboxd: SandboxdClient },
  claim: { route: Handler; batch: Handler },
): Hono {
  const { route } = routes;
  const { sandboxd } = deps;
  const app = new Hono();
  app.post('/v1/claim', claim.route);
  app.post('/v1/claims', claim.batch);
  app.post(
    '/v1/sandboxes/:id/release',
    route('release', async (c, caller) => {
      const id = sandboxId(c);
      if (id instanceof Response) return id;
      return passThrough(await sandboxd.release(id, caller.as === 'bearer' ? caller.authorization : undefined));
    }),
  );
  app.post(
    '/v1/sandboxes/:id/renew',
    route('renew', async (c, caller) => {
      const id = sandboxId(c);
      if (id instanceof Response) return id;
      const json = await readJsonBody(c, ANY_JSON, { ...BODY, emptyAs: {} });
      if (!json.ok) return bodyRefused(json);
      const body = parseBody(agentRenewRequestSchema, json.value);
      if (!body.ok) return toResponse(body.reply);
      return passThrough(
        await sandboxd.renew(id, JSON.stringify(body.value), caller.as === 'bearer' ? caller.authorization : undefined),
      );
    }),
  );
  app.get(
    '/v1/sandboxes',
    route('list_sandboxes', async (c) => {
      const raw = c.req.query('claim_ref');
      let claimRef: string | undefined;
      if (raw !== undefined) {
        const parsed = claimRefSchema.safeParse(raw);
        if (!parsed.success)
          return errorResponse(400, 'BadRequest', `claim_ref: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
        claimRef = parsed.data;
      }
      const answer = await sandboxd.listSandboxes(claimRef);
      // A lookup by claim_ref is filtered here too: a sandboxd that ignores the filter answers every claim it holds,
      // and a caller taking those for its own would adopt, or release as duplicates, other callers' sandboxes.
      if (claimRef !== undefined && answer.status === 200) return onlyClaimRef(await text(answer.body), claimRef);
      const headers = { 'content-type': answer.contentType ?? 'application/json' };
      return new Response(Readable.toWeb(answer.body) as ReadableStream<Uint8Array>, {
        status: answer.status,
        headers,
      });
    }),
  );
  app.get(
    '/v1/sandboxes/:id',
    route('get_sandbox', async (c) => {
      const id = sandboxId(c);
      if (id instanceof Response) return id;
      return passThrough(await sandboxd.getSandbox(id));
    }),
  );
  return app;
}

/**
 * sandboxd's list with only the rows recorded under exactly `claimRef`, each row as sandboxd wrote it. A body that is
 * not a list is passed on as it came (the caller's parser words the problem).
 */
function onlyClaimRef(body: string, claimRef: string): Response {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  const list = json as { sandboxes?: unknown } | undefined;
  if (typeof list !== 'object' || list === null || !Array.isArray(list.sandboxes))
    return new Response(body, { status: 200, headers: { 'content-type': 'application/json' } });
  const rows = list.sandboxes.filter(
    (row: unknown) =>
      typeof row === 'object' && row !== null && (row as { claim_ref?: unknown }).claim_ref === claimRef,
  );
  return jsonResponse(200, { ...list, sandboxes: rows });
}
