// The HTTP claim API (docs/claim-api.md), served by every replica: its
// OpenAPI document (open: it holds no secret), the create route (create.ts;
// served ahead of the app on Node's own objects too, direct-create.ts) and
// the routes of a claim once made (claim-routes.ts), each route's access
// declared where it is added (access.ts), deny by default. Any other method on
// a served path answers 405 with Allow, and an unknown path 404, both only to
// a caller the API recognizes. Bodies are checked with the zod schemas of
// libs/api; nothing here writes to the apiserver.
import type { ClaimErrorBody } from '@warmpool/api';
import type { AccessReviewer } from '@warmpool/kube';
import { methodNotAllowed, type AheadOfApp, type Logger } from '@warmpool/runtime';
import { Hono, type Context } from 'hono';
import type { PeerCredentials } from '../../federation/peers.js';
import type { EnvClaimRouter } from '../../provisioning/env-claim-router.js';
import type { ClaimService } from '../../provisioning/claim-service.js';
import { claimAccess, ClaimCallers } from './access.js';
import { errorReply, fail, type ClaimApiEnv } from './answers.js';
import { claimRoutes } from './claim-routes.js';
import { createRoute } from './create.js';
import { directCreate } from './direct-create.js';
import { claimApiDocument } from './openapi.js';

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
   * and renew and release the claims it created here.
   */
  peers?: Pick<PeerCredentials, 'authenticate'>;
  /**
   * Whether a SandboxClaim of that name exists: its name is refused as a claimRef on every path, so a claim and a
   * Sandbox of one name never belong to two owners.
   */
  sandboxClaimNamed?: (namespace: string, name: string) => boolean;
}

/** The claim API: its Hono app, and its create route served on Node's own objects ahead of it (direct-create.ts). */
export interface ClaimApi {
  app: Hono<ClaimApiEnv>;
  ahead: AheadOfApp;
}

export function createClaimApi(options: ClaimApiOptions): ClaimApi {
  const { claims, logger } = options;
  const callers = new ClaimCallers(options.reviewer, options.peers);
  const access = claimAccess(callers);
  const answerError = (c: Context<ClaimApiEnv>, err: unknown): Response => {
    const { status, headers, body } = errorReply(err, logger, { method: c.req.method, path: c.req.path });
    return c.json<ClaimErrorBody>(body, status, headers);
  };
  const app = new Hono<ClaimApiEnv>()
    // Hono hands onError only what is an Error; anything else thrown (a string, undefined) would get node-server's
    // empty 500. Caught here, outside every route, it answers as errorReply says, as the direct path does.
    .use(
      '*',
      access.aroundEvery(async (c, next) => {
        try {
          await next();
        } catch (err) {
          return answerError(c, err);
        }
        return undefined;
      }),
    )
    .get('/openapi.json', access.open, (c) => c.json(claimApiDocument(), 200))
    .route('/', createRoute(access, options))
    .route('/', claimRoutes(access, claims, options.envs));
  const allowed = methodNotAllowed(app.routes);
  app.all('*', access.authenticated, (c) => {
    const allow = allowed(c.req.path);
    if (allow !== undefined)
      return c.json<ClaimErrorBody>(
        { error: `${c.req.method} is not allowed on ${c.req.path} (allowed: ${allow})`, reason: 'MethodNotAllowed' },
        405,
        { allow },
      );
    return fail(c, 'NotFound', `no such endpoint: ${c.req.method} ${c.req.path}`);
  });
  app.onError((err, c) => answerError(c, err));
  access.assertDeclared(app);
  return { app, ahead: directCreate(callers, options, logger) };
}
