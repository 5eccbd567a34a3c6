// Who may call what, declared once in ROUTE_ACCESS and applied to every route
// by the API's one route wrapper (and by the claim's direct path).
//
// - Health, readiness and metrics are open: probes and Prometheus must not
//   hold a credential that can claim sandboxes, and they reveal only counts.
// - Everything else needs the fleet token, except release and renew, which
//   also accept a sandbox's own token: a bearer that is not the fleet token is
//   handed to sandboxd unchanged for those two verbs only, and sandboxd judges
//   it (a wrong one answers 404, exactly as sandboxd does).
// - With no fleet token configured the agent is fail-closed: every guarded
//   endpoint answers 503. It never runs open.
// - Deny by default: a route missing from the table is refused (403), and
//   createApiApp will not build an app that registers one.
import { bearerToken, ConnectionTokenCheck, FLEET_TOKEN_ENV, type AcceptedToken } from '@warmpool/runtime';
import { errorReply, type Reply } from './responses.js';

export const NO_TOKEN_MESSAGE = `node agent has no API token configured (set --token-file or ${FLEET_TOKEN_ENV}); refusing every call`;

const CHALLENGE = { 'www-authenticate': 'Bearer' };

/** Who may call a route: anyone; the fleet token; the fleet token or a sandbox's own token. */
export type Access = 'open' | 'root' | 'sandbox-or-root';

/** Every route the agent serves, as `METHOD path` (Hono's pattern), and who may call it. */
export const ROUTE_ACCESS: ReadonlyMap<string, Access> = new Map<string, Access>([
  ['GET /healthz', 'open'],
  ['GET /readyz', 'open'],
  ['GET /metrics', 'open'],
  ['GET /openapi.json', 'open'],
  ['PUT /v1/pools', 'root'],
  ['GET /v1/info', 'root'],
  ['POST /v1/claim', 'root'],
  ['POST /v1/claims', 'root'],
  ['POST /v1/sandboxes/:id/release', 'sandbox-or-root'],
  ['POST /v1/sandboxes/:id/renew', 'sandbox-or-root'],
  ['GET /v1/sandboxes', 'root'],
  ['GET /v1/sandboxes/:id', 'root'],
  ['POST /v1/drain', 'root'],
  ['DELETE /v1/drain', 'root'],
]);

/** The declared access of a route, undefined when it has none (HEAD is GET's, as Hono routes it). */
export function accessOf(method: string, routePath: string): Access | undefined {
  return ROUTE_ACCESS.get(`${method === 'HEAD' ? 'GET' : method} ${routePath}`);
}

export type SandboxCaller =
  /** The fleet token: the agent calls sandboxd as root. */
  | { as: 'root' }
  /** Another bearer: passed to sandboxd as the caller's own `Authorization` header. */
  | { as: 'bearer'; authorization: string };

/** A caller let through to a route: anyone (open routes) or a SandboxCaller. */
export type Admitted = { as: 'anyone' } | SandboxCaller;

const ANYONE: Admitted = { as: 'anyone' };
const ROOT: Admitted = { as: 'root' };
// Unreachable: createApiApp refuses to build with an undeclared route.
const UNDECLARED: Reply = errorReply(500, 'Internal', 'this route declares no access; refused');

export class Gatekeeper {
  readonly #token: AcceptedToken;
  readonly #onConnection: ConnectionTokenCheck;

  constructor(token: AcceptedToken) {
    this.#token = token;
    this.#onConnection = new ConnectionTokenCheck(token);
  }

  /**
   * Lets a caller through to a route of `access` (undefined: undeclared, refused), or says why not. With the request's
   * `connection`, a root caller's header that connection already had admitted is not hashed again (ConnectionTokenCheck).
   */
  admit(
    access: Access | undefined,
    authorization: string | undefined,
    connection?: object,
  ): Admitted | { as: 'refused'; reply: Reply } {
    switch (access) {
      case 'open':
        return ANYONE;
      case 'root': {
        const refused = this.refuseUnlessRoot(authorization, connection);
        return refused === undefined ? ROOT : { as: 'refused', reply: refused };
      }
      case 'sandbox-or-root':
        return this.sandboxCaller(authorization);
      case undefined:
        return { as: 'refused', reply: UNDECLARED };
    }
  }

  /** undefined when the caller presented the fleet token; otherwise the refusal to send. */
  refuseUnlessRoot(authorization: string | undefined, connection?: object): Reply | undefined {
    if (!this.#token.configured) return errorReply(503, 'NoToken', NO_TOKEN_MESSAGE);
    const admitted =
      connection === undefined
        ? this.#token.matches(bearerToken(authorization))
        : this.#onConnection.admits(connection, authorization);
    if (admitted) return undefined;
    return errorReply(401, 'Unauthenticated', 'missing or invalid bearer token', undefined, CHALLENGE);
  }

  /** For release and renew: root, or a bearer to pass through; `refused` when neither. */
  sandboxCaller(authorization: string | undefined): SandboxCaller | { as: 'refused'; reply: Reply } {
    if (!this.#token.configured) return { as: 'refused', reply: errorReply(503, 'NoToken', NO_TOKEN_MESSAGE) };
    const presented = bearerToken(authorization);
    if (presented === undefined)
      return {
        as: 'refused',
        reply: errorReply(
          401,
          'Unauthenticated',
          "missing bearer token (the fleet token or the sandbox's own)",
          undefined,
          CHALLENGE,
        ),
      };
    if (this.#token.matches(presented)) return { as: 'root' };
    return { as: 'bearer', authorization: `Bearer ${presented}` };
  }
}
