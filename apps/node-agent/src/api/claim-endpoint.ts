// POST /v1/claim assembled: the declared access, the bound on claims in
// flight, the metrics and what an answer teaches the agent (a 429 asks for a
// fresh look at the node, a 200 names its owner address), for both of the
// claim's paths (claim-route.ts), and for every item of the batch verb
// POST /v1/claims on both of its paths (claims-batch-direct.ts,
// claims-batch-route.ts).
import { readJsonBody } from '@warmpool/runtime';
import type { AgentMetrics } from '../metrics.js';
import type { NodeState } from '../node-state.js';
import type { OwnerAddress } from '../owner-address.js';
import type { SandboxdAnswer, SandboxdClient } from '../sandboxd/client.js';
import { accessOf, type Access, type Gatekeeper } from './auth.js';
import { claimOne, type ClaimOneDependencies } from './claim-one.js';
import { claimRoute, directClaim, type DirectClaimHandler } from './claim-route.js';
import { directClaims } from './claims-batch-direct.js';
import { claimsBatchRoute } from './claims-batch-route.js';
import type { ClaimsInFlight } from './claims-in-flight.js';
import { toResponse, type Reply } from './responses.js';
import { BODY, bodyRefused, type Handler, type Routes } from './route.js';
import { ANY_JSON } from './strict-body.js';

export interface ClaimEndpointDependencies {
  sandboxd: SandboxdClient;
  gatekeeper: Gatekeeper;
  state: NodeState;
  /** Learns the node's owner address from the claim answers passed on. */
  ownerAddress: OwnerAddress;
  metrics: AgentMetrics;
  /** The bound on claims in flight to sandboxd. */
  inFlight: ClaimsInFlight;
}

export interface ClaimEndpoint {
  /** The claim on Node's own request and response. */
  direct: DirectClaimHandler;
  /** The claim's route in the Hono app. */
  route: Handler;
  /** POST /v1/claims on Node's own request and response: many claims, each run as `route` runs one. */
  directBatch: DirectClaimHandler;
  /** POST /v1/claims in the Hono app. */
  batch: Handler;
}

/**
 * POST /v1/claim: the direct path (claim-route.ts), served ahead of the app and from its route, and the wrapped route
 * for a claim that reaches the app without node-server's bindings.
 */
export function claimEndpoint(routes: Routes, deps: ClaimEndpointDependencies): ClaimEndpoint {
  const { route, failure } = routes;
  const { sandboxd, gatekeeper, state, metrics, inFlight } = deps;
  // A refusal may mean draining or full: worth a fresh look at the node, not worth waiting for.
  const answeredClaim = (answer: SandboxdAnswer): void => {
    if (answer.status === 429) state.pollSoon();
    else deps.ownerAddress.learnFromClaimAnswer(answer);
  };
  const recordClaim = metrics.requestRecorder('claim');
  const claimAccess = accessOf('POST', '/v1/claim');
  // Both verbs call sandboxd as root: they cannot pass a sandbox's own token on.
  for (const path of ['/v1/claim', '/v1/claims'])
    if (accessOf('POST', path) === 'sandbox-or-root')
      throw new Error(`POST ${path} must be declared root or open: it calls sandboxd as root`);
  const refusedAtLimit = (): void => metrics.claimRefusedAtLimit();
  metrics.readClaimsInFlight(() => inFlight.count);
  const observeClaim = (status: number, started: number): void => recordClaim('POST', status, started);
  // A direct path's admission: the route's declared access, answering only its refusal.
  const admitTo =
    (access: Access | undefined) =>
    (authorization: string | undefined, connection: object): Reply | undefined => {
      const caller = gatekeeper.admit(access, authorization, connection);
      return caller.as === 'refused' ? caller.reply : undefined;
    };
  const direct = directClaim({
    admit: admitTo(claimAccess),
    sandboxd,
    inFlight,
    refusedAtLimit,
    answered: answeredClaim,
    observe: observeClaim,
    failure: (err) => failure(err, 'POST', '/v1/claim'),
  });
  const one = (path: string): ClaimOneDependencies => ({
    sandboxd,
    inFlight,
    refusedAtLimit,
    answered: answeredClaim,
    failure: (err) => failure(err, 'POST', path),
  });
  const single = one('/v1/claim');
  const batchItem = one('/v1/claims');
  const recordBatch = metrics.requestRecorder('claims');
  const directBatch = directClaims({
    admit: admitTo(accessOf('POST', '/v1/claims')),
    one: batchItem,
    observeItem: observeClaim,
    observeRequest: (status, started) => recordBatch('POST', status, started),
  });
  const onHono = route('claim', async (c) => {
    const json = await readJsonBody(c, ANY_JSON, BODY);
    if (!json.ok) return bodyRefused(json);
    return toResponse(await claimOne(single, json.value));
  });
  return {
    direct,
    route: claimRoute(direct, onHono),
    directBatch,
    batch: claimRoute(directBatch, claimsBatchRoute(routes, batchItem, observeClaim)),
  };
}
