// Who may call the claim API: a configured peer cluster's token makes the
// request that peer's (no TokenReview: the peer authorized its own caller);
// any other bearer token is reviewed by the apiserver (TokenReview). A route
// then names the verb on sandboxclaims it needs in its path's namespace: a
// caller's is checked by a SubjectAccessReview; a peer needs none, since
// everything it does is in its own key space (scopeOf) and it creates only
// pinned Env claims (the create route). Each route declares which with
// RouteAccess (../access/route-access.ts).
import { isDnsLabel } from '@warmpool/api';
import type { AccessReviewer, ClaimVerb } from '@warmpool/kube';
import { bearerToken, requestHeader } from '@warmpool/runtime';
import type { PeerCredentials } from '../../federation/peers.js';
import { RouteAccess } from '../access/route-access.js';
import { fail, type ClaimApiEnv } from './answers.js';

/** The username a peer cluster acts as (in logs and messages): `warmpool:federation-peer:<id>`. */
export function peerUsername(peer: string): string {
  return `warmpool:federation-peer:${peer}`;
}

export function claimAccess(
  reviewer: AccessReviewer,
  peers: Pick<PeerCredentials, 'authenticate'> | undefined,
): RouteAccess<ClaimApiEnv, ClaimVerb> {
  return new RouteAccess<ClaimApiEnv, ClaimVerb>({
    authenticate: async (c) => {
      const token = bearerToken(requestHeader(c, 'authorization'));
      if (token === undefined)
        return fail(c, 'Unauthenticated', 'an Authorization: Bearer <Kubernetes token> header is required');
      const peer = peers?.authenticate(token);
      c.set('peer', peer);
      if (peer !== undefined) {
        c.set('user', { username: peerUsername(peer) });
        return undefined;
      }
      const user = await reviewer.authenticate(token);
      if (user === undefined) return fail(c, 'Unauthenticated', 'the token is not valid');
      c.set('user', user);
      return undefined;
    },
    authorize: async (c, verb) => {
      // A namespace is a DNS label, like a claimRef.
      const namespace = c.req.param('namespace');
      if (!isDnsLabel(namespace))
        return fail(c, 'BadRequest', 'the namespace in the path is not a valid namespace name');
      const user = c.get('user');
      if (c.get('peer') === undefined && !(await reviewer.authorize(user, namespace, verb)))
        return fail(
          c,
          'Forbidden',
          `${user.username} may not ${verb} sandboxclaims.extensions.agents.x-k8s.io in namespace ${namespace}`,
        );
      c.set('namespace', namespace);
      return undefined;
    },
  });
}
