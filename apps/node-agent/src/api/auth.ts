// Who may call what.
//
// - Health, readiness and metrics are open: probes and Prometheus must not
//   hold a credential that can claim sandboxes, and they reveal only counts.
// - Everything else needs the fleet token, except release and renew, which
//   also accept a sandbox's own token: a bearer that is not the fleet token is
//   handed to sandboxd unchanged for those two verbs only, and sandboxd judges
//   it (a wrong one answers 404, exactly as sandboxd does).
// - With no fleet token configured the agent is fail-closed: every guarded
//   endpoint answers 503. It never runs open.
import type { FleetToken } from '../token.js';
import { bearerToken } from '../token.js';
import { errorReply, type Reply } from './responses.js';

export const NO_TOKEN_MESSAGE = 'node agent has no API token configured (set --token-file or WARMPOOL_API_TOKEN); refusing every call';

const CHALLENGE = { 'www-authenticate': 'Bearer' };

export type SandboxCaller =
  /** The fleet token: the agent calls sandboxd as root. */
  | { as: 'root' }
  /** Another bearer: passed to sandboxd as the caller's own `Authorization` header. */
  | { as: 'bearer'; authorization: string };

export class Gatekeeper {
  readonly #token: FleetToken;

  constructor(token: FleetToken) {
    this.#token = token;
  }

  /** undefined when the caller presented the fleet token; otherwise the refusal to send. */
  refuseUnlessRoot(authorization: string | undefined): Reply | undefined {
    if (!this.#token.configured) return errorReply(503, 'NoToken', NO_TOKEN_MESSAGE);
    if (this.#token.matches(bearerToken(authorization))) return undefined;
    return errorReply(401, 'Unauthenticated', 'missing or invalid bearer token', undefined, CHALLENGE);
  }

  /** For release and renew: root, or a bearer to pass through; `refused` when neither. */
  sandboxCaller(authorization: string | undefined): SandboxCaller | { as: 'refused'; reply: Reply } {
    if (!this.#token.configured) return { as: 'refused', reply: errorReply(503, 'NoToken', NO_TOKEN_MESSAGE) };
    const presented = bearerToken(authorization);
    if (presented === undefined) return { as: 'refused', reply: errorReply(401, 'Unauthenticated', 'missing bearer token (the fleet token or the sandbox\'s own)', undefined, CHALLENGE) };
    if (this.#token.matches(presented)) return { as: 'root' };
    return { as: 'bearer', authorization: `Bearer ${presented}` };
  }
}
