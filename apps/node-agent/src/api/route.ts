// The one wrapper every agent route goes through: timing by route name, the
// route's declared access (ROUTE_ACCESS in auth.ts; `access` only for the
// not-found answer, which has no route), and the one place sandboxd failures
// become answers. A handler's answer is a promise only when it is one (a
// then(), not an async wrapper: fewer hops per request).
import { INVALID_BODY_MESSAGE, MAX_BODY_BYTES } from '@warmpool/api';
import { requestHeader, type BodyProblem, type BodyResult, type Logger } from '@warmpool/runtime';
import type { Context } from 'hono';
import { routePath } from 'hono/route';
import type { AgentMetrics } from '../metrics.js';
import { isSandboxdUnavailable } from '../sandboxd/errors.js';
import { accessOf, type Access, type Admitted, type Gatekeeper } from './auth.js';
import { errorReply, errorResponse, toResponse, unavailableReply, type Reply } from './responses.js';

export const BODY = { maxBytes: MAX_BODY_BYTES, invalidMessage: INVALID_BODY_MESSAGE };

export type Handler = (c: Context) => Promise<Response> | Response;
/** A route's own work, run once the caller is admitted by the route's declared access. */
export type RouteHandler = (c: Context, caller: Admitted) => Promise<Response> | Response;

export interface Routes {
  /** Wraps a route's handler (see the header). */
  route(name: string, handler: RouteHandler, access?: Access): Handler;
  /** What a thrown error answers: sandboxd unavailable (503, counted) or an internal error (500, logged). */
  failure(err: unknown, method: string, path: string): Reply;
}

export function createRoutes(deps: { gatekeeper: Gatekeeper; metrics: AgentMetrics; logger: Logger }): Routes {
  const { gatekeeper, metrics, logger } = deps;
  const failure = (err: unknown, method: string, path: string): Reply => {
    if (isSandboxdUnavailable(err)) {
      metrics.sandboxdError(err.operation, err.kind);
      return unavailableReply(err);
    }
    logger.error('request failed', { err, method, path });
    return errorReply(500, 'Internal', 'internal error');
  };
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
  return { route, failure };
}

const BODY_REASONS = {
  too_large: 'BodyTooLarge',
  unreadable: 'InvalidBody',
  invalid: 'BadRequest',
} as const satisfies Record<BodyProblem, string>;

/** The 400 for a refused body (sandboxd's status and wording; the reason tells the three apart). */
export function bodyRefused(body: Extract<BodyResult<unknown>, { ok: false }>): Response {
  return errorResponse(400, BODY_REASONS[body.problem], body.error);
}
