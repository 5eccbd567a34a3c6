// The agent's HTTP API: sandboxd's endpoints, guarded (auth, body limit,
// validation) and passed through, plus SetPools' generation check, health,
// readiness and metrics.
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import {
  agentRenewRequestSchema,
  agentSetPoolsStrictSchema,
  claimRequestSchema,
  INVALID_BODY_MESSAGE,
  MAX_BODY_BYTES,
  type StaleGenerationBody,
} from '@warmpool/api';
import {
  methodNotAllowed,
  readJsonBody,
  requestHeader,
  type BodyProblem,
  type BodyResult,
  type Logger,
} from '@warmpool/runtime';
import { Hono, type Context } from 'hono';
import { routePath } from 'hono/route';
import type { GenerationGuard } from '../generation.js';
import type { AgentMetrics } from '../metrics.js';
import { infoFromAnswer, type NodeState } from '../node-state.js';
import type { OwnerAddress } from '../owner-address.js';
import type { SandboxdAnswer, SandboxdClient } from '../sandboxd/client.js';
import { isSandboxdUnavailable } from '../sandboxd/errors.js';
import { accessOf, ROUTE_ACCESS, type Access, type Admitted, type Gatekeeper } from './auth.js';
import { claimBodySchema, forwardedClaimJson } from './claim-body.js';
import { claimRoute } from './claim-route.js';
import type { ClaimsInFlight } from './claims-in-flight.js';
import { openApiDocument } from './openapi.js';
import { ANY_JSON, parseBody } from './strict-body.js';
import {
  errorReply,
  errorResponse,
  jsonResponse,
  passThrough,
  toResponse,
  unavailableReply,
  type Reply,
} from './responses.js';

const BODY = { maxBytes: MAX_BODY_BYTES, invalidMessage: INVALID_BODY_MESSAGE };

export interface ApiDependencies {
  sandboxd: SandboxdClient;
  gatekeeper: Gatekeeper;
  generations: GenerationGuard;
  state: NodeState;
  /** Learns the node's owner address from the claim answers passed on. */
  ownerAddress: OwnerAddress;
  metrics: AgentMetrics;
  /** The bound on claims in flight to sandboxd. */
  inFlight: ClaimsInFlight;
  /** Why the agent is not ready; empty when it is. */
  notReadyReasons: () => string[];
  logger: Logger;
}

type Handler = (c: Context) => Promise<Response> | Response;
/** A route's own work, run once the caller is admitted by the route's declared access. */
type RouteHandler = (c: Context, caller: Admitted) => Promise<Response> | Response;

/** Sandbox ids are opaque but plain (sandboxd's look like `sb_…`); anything else never reaches sandboxd. */
const SANDBOX_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const claimRefSchema = claimRequestSchema.shape.claim_ref.unwrap();

const BODY_REASONS = {
  too_large: 'BodyTooLarge',
  unreadable: 'InvalidBody',
  invalid: 'BadRequest',
} as const satisfies Record<BodyProblem, string>;

/** The 400 for a refused body (sandboxd's status and wording; the reason tells the three apart). */
function bodyRefused(body: Extract<BodyResult<unknown>, { ok: false }>): Response {
  return errorResponse(400, BODY_REASONS[body.problem], body.error);
}

export function createApiApp(deps: ApiDependencies): Hono {
  const { sandboxd, gatekeeper, generations, state, metrics, inFlight, logger } = deps;
  const app = new Hono();

  /**
   * Every route goes through here: timing by route name, the route's declared
   * access (ROUTE_ACCESS; `access` only for the not-found answer, which has no
   * route), and the one place sandboxd failures become answers. A promise only
   * when the handler's answer is one (a then(), not an async wrapper: fewer
   * hops per request).
   */
  const route = (name: string, handler: RouteHandler, access?: Access): Handler => {
    const record = metrics.requestRecorder(name);
    return (c) => {
      const started = performance.now();
      const done = (response: Response): Response => {
        record(c.req.method, response.status, started);
        return response;
      };
      const failed = (err: unknown): Response => done(toResponse(failure(err, c.req.method, c.req.path)));
      let answer: Promise<Response> | Response;
      try {
        const caller = gatekeeper.admit(
          access ?? accessOf(c.req.method, routePath(c)),
          requestHeader(c, 'authorization'),
        );
        answer = caller.as === 'refused' ? toResponse(caller.reply) : handler(c, caller);
      } catch (err) {
        return failed(err);
      }
      return answer instanceof Promise ? answer.then(done, failed) : done(answer);
    };
  };

  const failure = (err: unknown, method: string, path: string): Reply => {
    if (isSandboxdUnavailable(err)) {
      metrics.sandboxdError(err.operation, err.kind);
      return unavailableReply(err);
    }
    logger.error('request failed', { err, method, path });
    return errorReply(500, 'Internal', 'internal error');
  };

  /** sandboxd answered with a fresh info body (info, pools, drain): everyone watching the node sees it. */
  const passInfo = (answer: SandboxdAnswer): Response => {
    const info = infoFromAnswer(answer);
    if (info !== undefined) state.observe(info);
    return passThrough(answer);
  };

  const sandboxId = (c: Context): string | Response => {
    const id = c.req.param('id') ?? '';
    return SANDBOX_ID.test(id) ? id : errorResponse(400, 'BadRequest', 'invalid sandbox id');
  };

  app.get(
    '/healthz',
    route('healthz', () => new Response('ok', { status: 200, headers: { 'content-type': 'text/plain' } })),
  );

  app.get(
    '/readyz',
    route('readyz', () => {
      const reasons = deps.notReadyReasons();
      if (reasons.length === 0) return new Response('ok', { status: 200, headers: { 'content-type': 'text/plain' } });
      return errorResponse(503, 'NotReady', 'not ready', { reasons });
    }),
  );

  app.get(
    '/metrics',
    route('metrics', async () => {
      return new Response(await metrics.render(), { status: 200, headers: { 'content-type': metrics.contentType } });
    }),
  );

  app.get(
    '/openapi.json',
    route('openapi', () => jsonResponse(200, openApiDocument())),
  );

  app.put(
    '/v1/pools',
    route('set_pools', async (c) => {
      const raw = await readJsonBody(c, ANY_JSON, BODY);
      if (!raw.ok) return bodyRefused(raw);
      // Strict: sandboxd's pool fields warmpool supports pass on (warm_max, idle hibernate, archive); any other is 400.
      const body = parseBody(agentSetPoolsStrictSchema, raw.value);
      if (!body.ok) return toResponse(body.reply);
      const { generation, pools } = body.value;
      const json = JSON.stringify({ pools });
      const outcome = await generations.apply(
        generation,
        () => sandboxd.setPools(json),
        (answer) => answer.status >= 200 && answer.status < 300,
        (err) => isSandboxdUnavailable(err) && err.sent,
      );
      switch (outcome.outcome) {
        case 'not-recovered':
          return errorResponse(
            503,
            'GenerationNotRecovered',
            'the last applied generation is not known yet (the agent reads it back from its NodeInventory after a restart); retry shortly',
            undefined,
            { 'retry-after': '1' },
          );
        case 'stale': {
          metrics.stalePush();
          logger.warn('stale SetPools refused', { generation, appliedGeneration: outcome.appliedGeneration });
          const stale: StaleGenerationBody = {
            error: `generation ${generation} is older than the applied generation ${outcome.appliedGeneration}`,
            reason: 'StaleGeneration',
            appliedGeneration: outcome.appliedGeneration,
          };
          return jsonResponse(409, stale);
        }
        case 'applied':
          logger.info('pools set', { generation, pools: pools.length });
          return passInfo(outcome.result);
        case 'rejected':
          return passThrough(outcome.result);
      }
    }),
  );

  app.get(
    '/v1/info',
    route('info', async () => {
      return passInfo(await sandboxd.info());
    }),
  );

  // A refusal may mean draining or full: worth a fresh look at the node, not worth waiting for.
  const answeredClaim = (answer: SandboxdAnswer): void => {
    if (answer.status === 429) state.pollSoon();
    else deps.ownerAddress.learnFromClaimAnswer(answer);
  };
  const recordClaim = metrics.requestRecorder('claim');
  const claimAccess = accessOf('POST', '/v1/claim');
  // The direct path calls sandboxd as root: it cannot pass a sandbox's own token on.
  if (claimAccess === 'sandbox-or-root')
    throw new Error('POST /v1/claim must be declared root or open: its direct path calls sandboxd as root');
  const refusedAtLimit = (): void => metrics.claimRefusedAtLimit();
  metrics.readClaimsInFlight(() => inFlight.count);
  app.post(
    '/v1/claim',
    claimRoute(
      {
        admit: (authorization) => {
          const caller = gatekeeper.admit(claimAccess, authorization);
          return caller.as === 'refused' ? caller.reply : undefined;
        },
        sandboxd,
        inFlight,
        refusedAtLimit,
        answered: answeredClaim,
        observe: (status, started) => recordClaim('POST', status, started),
        failure: (err) => failure(err, 'POST', '/v1/claim'),
      },
      route('claim', async (c) => {
        const json = await readJsonBody(c, ANY_JSON, BODY);
        if (!json.ok) return bodyRefused(json);
        const body = parseBody(claimBodySchema, json.value);
        if (!body.ok) return toResponse(body.reply);
        if (!inFlight.tryAcquire()) {
          refusedAtLimit();
          return toResponse(inFlight.refusal());
        }
        let answer: SandboxdAnswer;
        try {
          answer = await sandboxd.claim(forwardedClaimJson(body.value));
        } finally {
          inFlight.release();
        }
        answeredClaim(answer);
        return passThrough(answer);
      }),
    ),
  );

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

  app.post(
    '/v1/drain',
    route('drain', async () => {
      logger.info('draining the node');
      return passInfo(await sandboxd.drain());
    }),
  );

  app.delete(
    '/v1/drain',
    route('undrain', async () => {
      logger.info('lifting the drain');
      return passInfo(await sandboxd.undrain());
    }),
  );

  // Every path above answers any other method 405 with Allow; only paths it does not serve are 404.
  const allowed = methodNotAllowed(app.routes);
  app.notFound(
    route(
      'not_found',
      (c) => {
        const allow = allowed(c.req.path);
        if (allow !== undefined)
          return errorResponse(
            405,
            'MethodNotAllowed',
            `${c.req.method} is not allowed on ${c.req.path} (allowed: ${allow})`,
            undefined,
            { allow },
          );
        return errorResponse(404, 'NotFound', 'not found');
      },
      'open',
    ),
  );
  app.onError((err, c) => toResponse(failure(err, c.req.method, c.req.path)));
  // Deny by default, at build time too: a route registered without a declared access is a bug.
  const undeclared = app.routes
    .filter((r) => accessOf(r.method, r.path) === undefined)
    .map((r) => `${r.method} ${r.path}`);
  if (undeclared.length > 0)
    throw new Error(`routes without a declared access in ROUTE_ACCESS: ${undeclared.join(', ')}`);
  if (app.routes.length !== ROUTE_ACCESS.size) throw new Error('ROUTE_ACCESS declares a route the API does not serve');
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
