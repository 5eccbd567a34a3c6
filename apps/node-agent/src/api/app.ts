// The agent's HTTP API, composed: probes (probes.ts), the node's verbs
// (node-routes.ts) and the sandbox verbs (sandbox-routes.ts), each a small
// Hono app whose routes go through one wrapper (route.ts); and the direct
// paths of the claim and the batch claim, which the server tries ahead of the
// app (claim-endpoint.ts). Deny by default:
// every route must have its access declared in ROUTE_ACCESS (auth.ts), checked
// when the app is built; any other method on a served path answers 405.
import { methodNotAllowed, type AheadOfApp, type Logger } from '@warmpool/runtime';
import { Hono } from 'hono';
import type { GenerationGuard } from '../generation.js';
import type { AgentMetrics } from '../metrics.js';
import type { NodeState } from '../node-state.js';
import type { OwnerAddress } from '../owner-address.js';
import type { SandboxdClient } from '../sandboxd/client.js';
import { accessOf, ROUTE_ACCESS, type Gatekeeper } from './auth.js';
import { claimEndpoint } from './claim-endpoint.js';
import type { ClaimsInFlight } from './claims-in-flight.js';
import { nodeApp } from './node-routes.js';
import { probesApp } from './probes.js';
import { errorResponse, toResponse } from './responses.js';
import { createRoutes } from './route.js';
import { sandboxesApp } from './sandbox-routes.js';

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

export interface ApiApp {
  app: Hono;
  /** `POST /v1/claim` and `POST /v1/claims` answered on Node's own objects, for the server to try ahead of `app`. */
  ahead: AheadOfApp;
}

export function createApiApp(deps: ApiDependencies): ApiApp {
  const routes = createRoutes(deps);
  const claim = claimEndpoint(routes, deps);
  const app = new Hono()
    .route('/', probesApp(routes, deps))
    .route('/', nodeApp(routes, deps))
    .route('/', sandboxesApp(routes, deps, claim));
  // Every path above answers any other method 405 with Allow; only paths it does not serve are 404.
  const allowed = methodNotAllowed(app.routes);
  app.notFound(
    routes.route(
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
  app.onError((err, c) => toResponse(routes.failure(err, c.req.method, c.req.path)));
  // Deny by default, at build time too: a route registered without a declared access is a bug.
  const undeclared = app.routes
    .filter((r) => accessOf(r.method, r.path) === undefined)
    .map((r) => `${r.method} ${r.path}`);
  if (undeclared.length > 0)
    throw new Error(`routes without a declared access in ROUTE_ACCESS: ${undeclared.join(', ')}`);
  if (app.routes.length !== ROUTE_ACCESS.size) throw new Error('ROUTE_ACCESS declares a route the API does not serve');
  // Only the exact paths: anything else (a query string, HEAD, another method) is the app's to route and answer.
  const ahead: AheadOfApp = (incoming, outgoing) => {
    if (incoming.method !== 'POST') return false;
    if (incoming.url === '/v1/claim') claim.direct(incoming, outgoing);
    else if (incoming.url === '/v1/claims') claim.directBatch(incoming, outgoing);
    else return false;
    return true;
  };
  return { app, ahead };
}
