// One claim body run the way POST /v1/claim runs it on the Hono path: the
// claim schema, the bound on claims in flight, sandboxd's answer passed on as
// it came, and what an answer teaches the agent. Shared by that route and by
// every item of POST /v1/claims, so the two cannot drift apart.
import type { SandboxdAnswer, SandboxdClient } from '../sandboxd/client.js';
import { claimBodySchema, forwardedClaimJson, quickForwardedClaimJson } from './claim-body.js';
import type { ClaimsInFlight } from './claims-in-flight.js';
import { passThroughReply, type Reply } from './responses.js';
import { parseBody } from './strict-body.js';

export interface ClaimOneDependencies {
  sandboxd: SandboxdClient;
  inFlight: ClaimsInFlight;
  /** A claim refused because `inFlight` is full. */
  refusedAtLimit(): void;
  /** Called after sandboxd answered, for side effects; must not throw. */
  answered(answer: SandboxdAnswer): void;
  /** The reply for a claim that got no answer from sandboxd, or failed here (logged there). */
  failure(err: unknown): Reply;
}

/**
 * What sandboxd is sent for a claim body that parsed as `json` (a string), or its refusal: the common body is checked
 * and forwarded in one step, anything else is zod's to judge and word. Both paths of POST /v1/claim take it.
 */
export function forwardedOrRefused(json: unknown): string | Reply {
  const quick = quickForwardedClaimJson(json);
  if (quick !== undefined) return quick;
  const body = parseBody(claimBodySchema, json);
  return body.ok ? forwardedClaimJson(body.value) : body.reply;
}

/** The reply POST /v1/claim gives for a body that parsed as `json`; never rejects. */
export function claimOne(deps: ClaimOneDependencies, json: unknown): Promise<Reply> {
  const forwarded = forwardedOrRefused(json);
  if (typeof forwarded !== 'string') return Promise.resolve(forwarded);
  if (!deps.inFlight.tryAcquire()) {
    deps.refusedAtLimit();
    return Promise.resolve(deps.inFlight.refusal());
  }
  let sent: Promise<SandboxdAnswer>;
  try {
    sent = deps.sandboxd.claim(forwarded);
  } catch (err) {
    deps.inFlight.release();
    return Promise.resolve(deps.failure(err));
  }
  return sent.then(
    (answer) => {
      deps.inFlight.release();
      deps.answered(answer);
      return passThroughReply(answer);
    },
    (err: unknown) => {
      deps.inFlight.release();
      return deps.failure(err);
    },
  );
}
