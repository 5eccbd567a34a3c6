// Who may call the Sandbox API: only kube-apiserver's front proxy
// (../http/access/front-proxy.ts), as the user it names; a resource route then
// asks a SubjectAccessReview as that user (sandboxes.agents.x-k8s.io, the
// verb, the path's namespace and name). Each route declares which with
// RouteAccess (../http/access/route-access.ts).
import type { HttpBindings } from '@hono/node-server';
import { AGENTS_GROUP, SandboxType } from '@warmpool/api';
import type { UserInfo } from '@warmpool/kube';
import { authenticateProxied, type RequestHeaderConfig } from '../http/access/front-proxy.js';
import { RouteAccess, type Doorkeeper } from '../http/access/route-access.js';
import { ApiError, statusResponse } from './responses.js';

export type SandboxVerb = 'get' | 'list' | 'watch' | 'create' | 'delete';

export interface SandboxAuthorizer {
  authorize(user: UserInfo, namespace: string, verb: SandboxVerb, name?: string): Promise<boolean>;
}

/**
 * The Sandbox API's Hono environment: Node's request (for the TLS socket), the front proxy's user, and the verb a
 * resource request was authorized for (its metrics' label).
 */
export type SandboxApiEnv = { Bindings: HttpBindings; Variables: { user: UserInfo; verb: SandboxVerb | undefined } };

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const PLURAL = SandboxType.plural;

export function sandboxAccess(
  /** The front proxy's settings; undefined until read (then every request but the health checks is 503). */
  requestHeaders: () => RequestHeaderConfig | undefined,
  authorizer: SandboxAuthorizer,
): RouteAccess<SandboxApiEnv, SandboxVerb> {
  const door: Doorkeeper<SandboxApiEnv, SandboxVerb> = {
    authenticate: async (c) => {
      const config = requestHeaders();
      if (config === undefined)
        return statusResponse(
          c,
          new ApiError(
            'ServiceUnavailable',
            'the front proxy settings (kube-system/extension-apiserver-authentication) have not been read yet',
          ),
        );
      const incoming = (c.env as Partial<HttpBindings> | undefined)?.incoming;
      const authentication =
        incoming !== undefined
          ? authenticateProxied(incoming, config)
          : ({ ok: false, message: 'only the front proxy may call this server (no TLS connection)' } as const);
      if (!authentication.ok) return statusResponse(c, new ApiError('Unauthorized', authentication.message));
      c.set('user', authentication.user);
      return undefined;
    },
    authorize: async (c, verb) => {
      c.set('verb', verb);
      const namespace = c.req.param('namespace');
      const name = c.req.param('name');
      if (namespace !== undefined && !DNS_LABEL.test(namespace))
        return statusResponse(c, new ApiError('BadRequest', `invalid namespace ${JSON.stringify(namespace)}`));
      const user = c.get('user');
      if (await authorizer.authorize(user, namespace ?? '', verb, name)) return undefined;
      const where = namespace === undefined ? 'at the cluster scope' : `in the namespace "${namespace}"`;
      const what = name === undefined ? `sandboxes.${AGENTS_GROUP}` : `sandboxes.${AGENTS_GROUP} "${name}"`;
      return statusResponse(
        c,
        new ApiError(
          'Forbidden',
          `${what} is forbidden: User "${user.username}" cannot ${verb} resource "${PLURAL}" in API group "${AGENTS_GROUP}" ${where}`,
          { ...(name !== undefined ? { name } : {}), group: AGENTS_GROUP, kind: PLURAL },
        ),
      );
    },
  };
  return new RouteAccess(door);
}
