// Who may call the claim API: a configured peer cluster's token makes the
// request that peer's (no TokenReview: the peer authorized its own caller);
// any other bearer token is reviewed by the apiserver (TokenReview). A route
// then names the verb on sandboxclaims it needs in its path's namespace: a
// caller's is checked by a SubjectAccessReview; a peer needs none, since
// everything it does is in its own key space (scopeOf) and it creates only
// pinned Env claims (the create route). Each route declares which with
// RouteAccess (../access/route-access.ts); the rules themselves are
// ClaimCallers', on the header and the path alone, so the create route
// served ahead of Hono (direct-create.ts) applies the very same. Both hand in
// the request's connection when they have it: a header that connection sent
// before is not hashed again for its TokenReview key (ConnectionTokenKeys),
// which changes no answer.
import { isDnsLabel } from '@warmpool/api';
import type { AccessReviewer, ClaimVerb } from '@warmpool/kube';
import { bearerToken, requestConnection, requestHeader } from '@warmpool/runtime';
import type { PeerCredentials } from '../../federation/peers.js';
import { ConnectionTokenKeys } from '../access/connection-token-keys.js';
import { RouteAccess } from '../access/route-access.js';
import { callerOf, fail, isRefusal, type Caller, type ClaimApiEnv, type Refusal } from './answers.js';

/** The username a peer cluster acts as (in logs and messages): `warmpool:federation-peer:<id>`. */
export function peerUsername(peer: string): string {
  return `warmpool:federation-peer:${peer}`;
}

/**
 * The claim API's access rules, on a request's Authorization header and path namespace alone: the Hono routes
 * (claimAccess) and the create route served ahead of Hono (direct-create.ts) both ask these.
 */
export class ClaimCallers {
  readonly #reviewer: AccessReviewer;
  readonly #peers: Pick<PeerCredentials, 'authenticate'> | undefined;
  /** Undefined for a reviewer that keys nothing (a stand-in): it is asked with the token alone. */
  readonly #keys: ConnectionTokenKeys | undefined;

  constructor(reviewer: AccessReviewer, peers: Pick<PeerCredentials, 'authenticate'> | undefined) {
    this.#reviewer = reviewer;
    this.#peers = peers;
    const tokenKey = reviewer.tokenKey?.bind(reviewer);
    this.#keys = tokenKey === undefined ? undefined : new ConnectionTokenKeys(tokenKey);
  }

  /**
   * The caller the header's bearer token names, or the refusal. `connection` (the request's socket, when known) only
   * spares hashing a header it sent before: the answer is the same without it.
   */
  async identify(authorization: string | undefined, connection?: object): Promise<Caller | Refusal> {
    const token = authorization === undefined ? undefined : bearerToken(authorization);
    if (authorization === undefined || token === undefined)
      return { refused: 'Unauthenticated', error: 'an Authorization: Bearer <Kubernetes token> header is required' };
    // Peers first, on every request, exactly as without a connection: a peer's token is never reviewed nor keyed.
    const peer = this.#peers?.authenticate(token);
    if (peer !== undefined) return { user: { username: peerUsername(peer) }, peer };
    const user = await this.#reviewer.authenticate(token, this.#keys?.keyOf(authorization, token, connection));
    if (user === undefined) return { refused: 'Unauthenticated', error: 'the token is not valid' };
    return { user, peer: undefined };
  }

  /** The path's namespace when `caller` may `verb` sandboxclaims there, else the refusal. */
  async admit(caller: Caller, namespace: string | undefined, verb: ClaimVerb): Promise<string | Refusal> {
    // A namespace is a DNS label, like a claimRef.
    if (!isDnsLabel(namespace))
      return { refused: 'BadRequest', error: 'the namespace in the path is not a valid namespace name' };
    const { user, peer } = caller;
    if (peer === undefined && !(await this.#reviewer.authorize(user, namespace, verb)))
      return {
        refused: 'Forbidden',
        error: `${user.username} may not ${verb} sandboxclaims.extensions.agents.x-k8s.io in namespace ${namespace}`,
      };
    return namespace;
  }
}

/** The claim API's doorkeeper for its Hono routes: ClaimCallers' answers kept in the context, or the refusal sent. */
export function claimAccess(callers: ClaimCallers): RouteAccess<ClaimApiEnv, ClaimVerb> {
  return new RouteAccess<ClaimApiEnv, ClaimVerb>({
    authenticate: async (c) => {
      const caller = await callers.identify(requestHeader(c, 'authorization'), requestConnection(c));
      if (isRefusal(caller)) return fail(c, caller.refused, caller.error);
      c.set('peer', caller.peer);
      c.set('user', caller.user);
      return undefined;
    },
    authorize: async (c, verb) => {
      const namespace = await callers.admit(callerOf(c), c.req.param('namespace'), verb);
      if (typeof namespace !== 'string') return fail(c, namespace.refused, namespace.error);
      c.set('namespace', namespace);
      return undefined;
    },
  });
}
