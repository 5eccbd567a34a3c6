// The HTTP claim API (docs/claim-api.md), served by every
// replica. Every request is authenticated first, whatever its path: a
// configured peer cluster's token makes it that peer's (no TokenReview), any
// other token is reviewed by the apiserver (TokenReview). Each route then
// declares, once, the verb on sandboxclaims it needs in its path's namespace:
// a caller's is checked by a SubjectAccessReview, a peer's by the peer rules
// (peerMay). Routes are only added through `route()`, so none can skip that
// check: deny by default. Bodies are checked
// with the zod schemas of libs/api; nothing here writes to the apiserver.
// The one public path is GET /openapi.json (the document holds no secret);
// any other method on a served path answers 405 with Allow.
import {
  CLAIMREF_GENERATED_HEADER,
  claimRefSchema,
  createClaimRequestSchema,
  DEFAULT_CLAIM_TTL_SECONDS,
  ownerDigest,
  renewClaimRequestSchema,
  type ClaimBody,
  type ClaimErrorBody,
  type ClaimFailureReason,
} from '@warmpool/api';
import { bearerToken, methodNotAllowed, readJsonBody, requestHeader, type Logger } from '@warmpool/runtime';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { PeerCredentials } from '../../federation/peers.js';
import type { EnvClaimRouter, EnvGrant } from '../../provisioning/env-claim-router.js';
import {
  ClaimFailure,
  type ClaimGrant,
  type ClaimOwner,
  type ClaimScope,
  type ClaimService,
} from '../../provisioning/claim-service.js';
import { generateClaimRef } from '../../provisioning/claim-ref.js';
import { ReviewUnavailable, type AccessReviewer, type ClaimVerb, type UserInfo } from '@warmpool/kube';
import { claimApiDocument } from './openapi.js';

const MAX_BODY_BYTES = 64 * 1024;
const INVALID_BODY = 'the body is not a JSON object of the documented fields';
/** A namespace is a DNS label, like a claimRef. */
const namespaceSchema = claimRefSchema;
/** A sandbox id (`sb_…`) or a claimRef. */
const CLAIM_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

const STATUS_OF: Record<ClaimFailureReason, ContentfulStatusCode> = {
  BadRequest: 400,
  Unauthenticated: 401,
  Forbidden: 403,
  PoolNotFound: 404,
  EnvNotFound: 404,
  NotDriven: 404,
  ClaimNotFound: 404,
  ClaimRefInUse: 409,
  Expired: 404,
  NoCapacity: 429,
  // The nodes answered, and refused: a gateway's upstream error.
  NodeRefused: 502,
  Unavailable: 503,
  Timeout: 504,
  MethodNotAllowed: 405,
  NotFound: 404,
};

/** `peer`: the id of the peer cluster whose token the request bears; undefined for any other caller. */
type Env = { Variables: { user: UserInfo; namespace: string; peer: string | undefined } };

/** The username a peer cluster acts as (in logs and messages): `warmpool:federation-peer:<id>`. */
export function peerUsername(peer: string): string {
  return `warmpool:federation-peer:${peer}`;
}

export interface ClaimApiOptions {
  claims: ClaimService;
  reviewer: AccessReviewer;
  logger: Logger;
  /** Claims for a SandboxEnv (`env` in the body); without it such a body is refused. */
  envs?: EnvClaimRouter;
  /**
   * The peer clusters, each with a token of its own. A request bearing one is
   * that peer's: it is not reviewed by the apiserver (the peer authorized its
   * own caller); it may only create claims pinned to a member pool of an Env,
   * and renew and release the claims it created here (peerMay).
   */
  peers?: Pick<PeerCredentials, 'authenticate'>;
  /**
   * Whether a SandboxClaim of that name exists: its name is refused as a claimRef on every path, so a claim and a
   * Sandbox of one name never belong to two owners.
   */
  sandboxClaimNamed?: (namespace: string, name: string) => boolean;
}

export function createClaimApi(options: ClaimApiOptions): Hono<Env> {
  const { claims, reviewer, logger } = options;
  const app = new Hono<Env>();

  // Registered before authentication, so it is answered without a token.
  app.get('/openapi.json', (c) => c.json(claimApiDocument(), 200));

  app.use('*', async (c, next) => {
    const token = bearerToken(requestHeader(c, 'authorization'));
    if (token === undefined)
      return fail(c, 'Unauthenticated', 'an Authorization: Bearer <Kubernetes token> header is required');
    const peer = options.peers?.authenticate(token);
    c.set('peer', peer);
    if (peer !== undefined) {
      c.set('user', { username: peerUsername(peer) });
      await next();
      return;
    }
    const user = await reviewer.authenticate(token);
    if (user === undefined) return fail(c, 'Unauthenticated', 'the token is not valid');
    c.set('user', user);
    await next();
  });

  const allow =
    (verb: ClaimVerb): MiddlewareHandler<Env> =>
    async (c, next) => {
      const namespace = namespaceSchema.safeParse(c.req.param('namespace'));
      if (!namespace.success) return fail(c, 'BadRequest', 'the namespace in the path is not a valid namespace name');
      const user = c.get('user');
      const peer = c.get('peer');
      // A peer needs no RBAC: everything it does is in its own key space (scopeOf), so its token reads or changes no
      // claim of this cluster's callers or of another peer, and creates only pinned Env claims (the create route).
      if (peer === undefined && !(await reviewer.authorize(user, namespace.data, verb))) {
        return fail(
          c,
          'Forbidden',
          `${user.username} may not ${verb} sandboxclaims.extensions.agents.x-k8s.io in namespace ${namespace.data}`,
        );
      }
      c.set('namespace', namespace.data);
      await next();
    };

  type Method = 'get' | 'post' | 'delete';
  const route = (
    method: Method,
    path: string,
    verb: ClaimVerb,
    handler: (c: Context<Env>) => Promise<Response>,
  ): void => {
    app.on(method.toUpperCase(), path, allow(verb), handler);
  };

  route('post', '/v1/namespaces/:namespace/claims', 'create', async (c) => {
    const body = await readJsonBody(c, createClaimRequestSchema, {
      maxBytes: MAX_BODY_BYTES,
      invalidMessage: INVALID_BODY,
    });
    if (!body.ok) return fail(c, 'BadRequest', body.error);
    const { warmPool, env, scalingGroup, target, ttlSeconds, claimRef } = body.value;
    if (claimRef !== undefined && options.sandboxClaimNamed?.(c.get('namespace'), claimRef) === true)
      return fail(
        c,
        'BadRequest',
        `claimRef ${claimRef} names a SandboxClaim in namespace ${c.get('namespace')}; choose another claimRef`,
      );
    const peer = c.get('peer');
    if ((peer !== undefined) !== (target !== undefined)) {
      return fail(
        c,
        'Forbidden',
        peer !== undefined
          ? 'a peer cluster may only create claims pinned to a member pool (target)'
          : 'target is only for peer clusters presenting their peer token',
      );
    }
    if (env !== undefined) {
      if (options.envs === undefined)
        return fail(
          c,
          'BadRequest',
          'claims for a SandboxEnv need the claim pipeline with SandboxEnvs (not configured here)',
        );
      const order = {
        namespace: c.get('namespace'),
        env,
        scalingGroup: scalingGroup ?? '',
        scope: scopeOf(c),
        owner: ownerOf(c, `env:${env}`),
        claimRef: claimRef ?? generateClaimRef(),
        ttlSeconds: ttlSeconds ?? DEFAULT_CLAIM_TTL_SECONDS,
        // A peer forwards the claimRef its caller's front door made up, and says so: a sandbox served after it gave up
        // is released here too.
        claimRefGenerated:
          claimRef === undefined || (peer !== undefined && requestHeader(c, CLAIMREF_GENERATED_HEADER) === '1'),
      };
      const served: EnvGrant =
        peer !== undefined && target !== undefined
          ? await options.envs.claimPinned(peer, order, target, { signal: c.req.raw.signal })
          : await options.envs.claim(order, { signal: c.req.raw.signal });
      return c.json<ClaimBody>(
        { ...bodyOf(served.grant, true), cluster: served.cluster, memberPool: served.memberPool },
        200,
      );
    }
    if (warmPool === undefined) return fail(c, 'BadRequest', 'give exactly one of warmPool and env');
    const grant = await claims.claim(
      {
        namespace: c.get('namespace'),
        warmPool,
        claimRef: claimRef ?? generateClaimRef(),
        ttlSeconds: ttlSeconds ?? DEFAULT_CLAIM_TTL_SECONDS,
        owner: ownerOf(c, `pool:${warmPool}`),
        claimRefGenerated: claimRef === undefined,
      },
      { signal: c.req.raw.signal },
    );
    return c.json<ClaimBody>(bodyOf(grant, true), 200);
  });

  route('get', '/v1/namespaces/:namespace/claims/:id', 'get', async (c) => {
    const id = claimId(c);
    if (id === undefined) return fail(c, 'BadRequest', 'the claim id in the path is not a sandbox id or claimRef');
    const grant = await claims.lookup(scopeOf(c), id);
    if (grant === undefined)
      return fail(c, 'ClaimNotFound', `claim ${id} not found in namespace ${c.get('namespace')}`);
    return c.json<ClaimBody>(bodyOf(grant, false), 200);
  });

  route('post', '/v1/namespaces/:namespace/claims/:id/renew', 'update', async (c) => {
    const id = claimId(c);
    if (id === undefined) return fail(c, 'BadRequest', 'the claim id in the path is not a sandbox id or claimRef');
    const body = await readJsonBody(c, renewClaimRequestSchema, {
      maxBytes: MAX_BODY_BYTES,
      invalidMessage: INVALID_BODY,
      emptyAs: {},
    });
    if (!body.ok) return fail(c, 'BadRequest', body.error);
    const ttlSeconds = body.value.ttlSeconds ?? DEFAULT_CLAIM_TTL_SECONDS;
    const renewed =
      options.envs !== undefined
        ? await options.envs.renew(scopeOf(c), id, ttlSeconds)
        : await claims.renew(scopeOf(c), id, ttlSeconds);
    return c.json({ deadline: renewed.deadline }, 200);
  });

  route('delete', '/v1/namespaces/:namespace/claims/:id', 'delete', async (c) => {
    const id = claimId(c);
    if (id === undefined) return fail(c, 'BadRequest', 'the claim id in the path is not a sandbox id or claimRef');
    const released =
      options.envs !== undefined ? await options.envs.release(scopeOf(c), id) : await claims.release(scopeOf(c), id);
    if (!released) return fail(c, 'ClaimNotFound', `claim ${id} not found in namespace ${c.get('namespace')}`);
    return c.body(null, 204);
  });

  // Every path above answers any other method 405 with Allow (after authentication); only paths it does not serve are
  // 404.
  const allowed = methodNotAllowed(app.routes);
  app.notFound((c) => {
    const allow = allowed(c.req.path);
    if (allow !== undefined)
      return c.json<ClaimErrorBody>(
        { error: `${c.req.method} is not allowed on ${c.req.path} (allowed: ${allow})`, reason: 'MethodNotAllowed' },
        405,
        { allow },
      );
    return c.json<ClaimErrorBody>(
      { error: `no such endpoint: ${c.req.method} ${c.req.path}`, reason: 'NotFound' },
      404,
    );
  });
  app.onError((err, c) => {
    if (err instanceof ClaimFailure) return fail(c, err.reason, err.message, err.retryAfterSeconds);
    if (err instanceof ReviewUnavailable) return fail(c, 'Unavailable', err.message, 1);
    logger.error('claim API request failed', { method: c.req.method, path: c.req.path, err });
    return fail(c, 'Unavailable', 'internal error', 1);
  });
  return app;
}

function fail(c: Context, reason: ClaimFailureReason, error: string, retryAfterSeconds?: number): Response {
  const status = STATUS_OF[reason];
  const retryAfter = retryAfterSeconds ?? (reason === 'NoCapacity' ? 1 : undefined);
  const headers: Record<string, string> = {};
  if (retryAfter !== undefined && (status === 429 || status === 503))
    headers['retry-after'] = String(Math.max(1, Math.ceil(retryAfter)));
  if (status === 401) headers['www-authenticate'] = 'Bearer';
  return c.json<ClaimErrorBody>({ error, reason }, status, headers);
}

function claimId(c: Context): string | undefined {
  const id = c.req.param('id') ?? '';
  return CLAIM_ID.test(id) ? id : undefined;
}

function bodyOf(grant: ClaimGrant, withToken: boolean): ClaimBody {
  const body: ClaimBody = {
    id: grant.id,
    deadline: grant.deadline,
    ownerAddr: grant.ownerAddr,
    node: grant.node,
    namespace: grant.namespace,
    warmPool: grant.warmPool,
    claimRef: grant.claimRef,
    tier: grant.tier,
  };
  if (grant.cluster !== undefined) body.cluster = grant.cluster;
  if (withToken) body.token = grant.token;
  return body;
}

/** Each front door is its own key space: a peer sees only the claims it made, an HTTP caller never a SandboxClaim's. */
function scopeOf(c: Context<Env>): ClaimScope {
  const namespace = c.get('namespace');
  const peer = c.get('peer');
  return peer !== undefined ? { namespace, door: 'fed', peer } : { namespace, door: 'http' };
}

/** Who claims: a peer, or the reviewed identity together with what it asked for (a replay must match both). */
function ownerOf(c: Context<Env>, asked: string): ClaimOwner {
  const peer = c.get('peer');
  if (peer !== undefined) return { door: 'fed', peer };
  return { door: 'http', digest: ownerDigest(c.get('user'), asked) };
}
