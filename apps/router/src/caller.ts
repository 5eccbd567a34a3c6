// Who calls, and whether they may reach the sandbox they name. The caller's
// Kubernetes token comes as `Authorization: Bearer <token>`, or as the
// password of HTTP Basic (`http://any:<token>@router:8080`, the one way an
// unmodified upstream client can carry a token in its URL); it is checked with
// a TokenReview. Authorization is a SubjectAccessReview of `get` on that one
// Sandbox (sandboxes.agents.x-k8s.io, by name) in the header's namespace: the
// same RBAC that lets a user read a Sandbox lets them use it. A request with
// no credential at all is refused (401) unless the router was given a
// tokenless identity (--tokenless-user), which is then reviewed the same way.
import type { AccessReviewer, UserInfo } from '@warmpool/kube';
import { ReviewUnavailable } from '@warmpool/kube';
import { bearerToken } from '@warmpool/runtime';
import { refusal, type Refusal } from './refusal.js';
import type { Target } from './target.js';

/** The reviewer the router needs: authenticate, and authorize one verb on one named object. */
export interface SandboxAccessReviewer extends Pick<AccessReviewer, 'authenticate'> {
  authorize(user: UserInfo, namespace: string, verb: 'get', name?: string): Promise<boolean>;
}

export type Credential = { kind: 'token'; token: string } | { kind: 'none' } | { kind: 'malformed' };

const BASIC = /^Basic[ \t]+([A-Za-z0-9+/=]+)[ \t]*$/i;

export function credentialOf(authorization: string | undefined): Credential {
  if (authorization === undefined || authorization.trim() === '') return { kind: 'none' };
  const bearer = bearerToken(authorization);
  if (bearer !== undefined) return { kind: 'token', token: bearer };
  const basic = BASIC.exec(authorization)?.[1];
  if (basic === undefined) return { kind: 'malformed' };
  const decoded = Buffer.from(basic, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const password = colon === -1 ? '' : decoded.slice(colon + 1);
  return password === '' ? { kind: 'malformed' } : { kind: 'token', token: password };
}

export interface CallerGateOptions {
  reviewer: SandboxAccessReviewer;
  /** The identity a request without any credential is reviewed as; undefined = such requests are 401. */
  tokenlessUser?: string;
}

export class CallerGate {
  readonly #reviewer: SandboxAccessReviewer;
  readonly #tokenless: UserInfo | undefined;

  constructor(options: CallerGateOptions) {
    this.#reviewer = options.reviewer;
    this.#tokenless = options.tokenlessUser === undefined ? undefined : { username: options.tokenlessUser, groups: [] };
  }

  /** The caller's user when they may use the target sandbox; else the refusal (401, 403, or 503 when undecidable). */
  async admit(authorization: string | undefined, target: Target): Promise<UserInfo | Refusal> {
    try {
      const user = await this.#userOf(credentialOf(authorization));
      if (!('username' in user)) return user;
      const allowed = await this.#reviewer.authorize(user, target.namespace, 'get', target.name);
      if (allowed) return user;
      return refusal(
        'Forbidden',
        `${user.username} may not get sandboxes.agents.x-k8s.io "${target.name}" in namespace "${target.namespace}"`,
      );
    } catch (err) {
      if (err instanceof ReviewUnavailable) return refusal('ReviewUnavailable', err.message);
      throw err;
    }
  }

  async #userOf(credential: Credential): Promise<UserInfo | Refusal> {
    if (credential.kind === 'malformed')
      return refusal('Unauthenticated', 'Authorization must be Bearer <token> or Basic with the token as password');
    if (credential.kind === 'none')
      return this.#tokenless ?? refusal('Unauthenticated', 'a Kubernetes bearer token is required');
    const user = await this.#reviewer.authenticate(credential.token);
    return user ?? refusal('Unauthenticated', 'the token is not valid');
  }
}
