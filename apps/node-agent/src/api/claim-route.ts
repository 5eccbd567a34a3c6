// POST /v1/claim, the agent's hot path. The claim reads the body off Node's
// request and writes its answer on Node's response: no Web Request or
// Response, no router, and no promise, between the request and sandboxd's
// answer. The server hands it `POST /v1/claim` ahead of the Hono app
// (directClaim); a claim that reaches the app anyway (a query string) takes
// the same path through node-server's `incoming`/`outgoing` bindings, and
// anywhere else (app.request() in a test) the same rules run through Hono's
// objects. The checks are the ones every route makes (the declared access,
// 1 MiB body, the claim schema, the bound on claims in flight, sandboxd's
// answer passed through as it came).
import type { HttpBindings } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { INVALID_BODY_MESSAGE, MAX_BODY_BYTES } from '@warmpool/api';
import { readIncomingJson, TOO_LARGE, UNREADABLE } from '@warmpool/runtime';
import type { Context } from 'hono';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SandboxdAnswer, SandboxdClient, SandboxdReceiver } from '../sandboxd/client.js';
import { forwardedOrRefused } from './claim-one.js';
import type { ClaimsInFlight } from './claims-in-flight.js';
import { errorReply, writeOrFail, writePassThrough, writeReply, type Reply } from './responses.js';

type Handler = (c: Context) => Promise<Response> | Response;

export interface ClaimRouteDependencies {
  /**
   * The route's declared access (ROUTE_ACCESS) applied to the Authorization header sent on `connection` (the request's
   * socket): undefined to admit, else the refusal.
   */
  admit(authorization: string | undefined, connection: object): Reply | undefined;
  sandboxd: SandboxdClient;
  inFlight: ClaimsInFlight;
  /** A claim refused because `inFlight` is full. */
  refusedAtLimit(): void;
  /**
   * Called after sandboxd's answer is passed on, for side effects (a fresh look at the node after a 429); must not
   * throw.
   */
  answered(answer: SandboxdAnswer): void;
  /** Every reply, timed from the start of the request. */
  observe(status: number, startedMs: number): void;
  /** The reply for a call that got no answer from sandboxd, or that failed here (logged there). */
  failure(err: unknown): Reply;
}

/**
 * node-server skips writing a response only for its "already sent" marker,
 * and only when that marker is a real Response (it is, when node-server's
 * utils load before any server swaps in its lightweight Response class, as
 * they do in this package). If it is not, answering directly would race
 * node-server's own write, so the claim takes the Hono path instead.
 */
const markerIsNative = Object.getOwnPropertySymbols(RESPONSE_ALREADY_SENT).length === 0;

/** One claim answered on Node's own request and response, start to end; never throws. */
export type DirectClaimHandler = (incoming: IncomingMessage, outgoing: ServerResponse) => void;

export function directClaim(deps: ClaimRouteDependencies): DirectClaimHandler {
  return (incoming, outgoing) => new DirectClaim(deps, outgoing).start(incoming);
}

/** A claim route in the Hono app (the claim's, the batch's): `direct` when served by @hono/node-server, `onHono` otherwise. */
export function claimRoute(direct: DirectClaimHandler, onHono: Handler): Handler {
  return (c) => {
    const env = c.env as Partial<HttpBindings> | undefined;
    if (!markerIsNative || env?.incoming === undefined || env.outgoing === undefined) return onHono(c);
    direct(env.incoming, env.outgoing);
    return RESPONSE_ALREADY_SENT;
  };
}

/** One claim, from the request's head to the reply; it receives sandboxd's answer itself. */
class DirectClaim implements SandboxdReceiver {
  readonly #deps: ClaimRouteDependencies;
  readonly #outgoing: ServerResponse;
  readonly #started = performance.now();
  #holdsSlot = false;

  constructor(deps: ClaimRouteDependencies, outgoing: ServerResponse) {
    this.#deps = deps;
    this.#outgoing = outgoing;
  }

  start(incoming: IncomingMessage): void {
    try {
      const refused = this.#deps.admit(incoming.headers.authorization, incoming.socket);
      if (refused !== undefined) {
        this.#reply(refused);
        return;
      }
      readIncomingJson(incoming, MAX_BODY_BYTES, (json) => this.#withBody(json));
    } catch (err) {
      this.failed(err as Error);
    }
  }

  answer(answer: SandboxdAnswer): void {
    this.#releaseSlot();
    const outgoing = this.#outgoing;
    const status = writeOrFail(outgoing, answer.status, () => writePassThrough(outgoing, answer), this.#deps.failure);
    this.#deps.observe(status, this.#started);
    this.#deps.answered(answer);
  }

  failed(err: Error): void {
    this.#releaseSlot();
    this.#reply(this.#deps.failure(err));
  }

  // Runs from the request's 'end' event: nothing above it would catch a throw.
  #withBody(json: unknown): void {
    try {
      if (json === TOO_LARGE || json === UNREADABLE) {
        this.#reply(errorReply(400, json === TOO_LARGE ? 'BodyTooLarge' : 'InvalidBody', INVALID_BODY_MESSAGE));
        return;
      }
      const forwarded = forwardedOrRefused(json);
      if (typeof forwarded !== 'string') {
        this.#reply(forwarded);
        return;
      }
      if (!this.#deps.inFlight.tryAcquire()) {
        this.#deps.refusedAtLimit();
        this.#reply(this.#deps.inFlight.refusal());
        return;
      }
      this.#holdsSlot = true;
      this.#deps.sandboxd.claimInto(forwarded, this);
    } catch (err) {
      this.failed(err as Error);
    }
  }

  #releaseSlot(): void {
    if (!this.#holdsSlot) return;
    this.#holdsSlot = false;
    this.#deps.inFlight.release();
  }

  #reply(reply: Reply): void {
    const outgoing = this.#outgoing;
    const status = writeOrFail(outgoing, reply.status, () => writeReply(outgoing, reply), this.#deps.failure);
    this.#deps.observe(status, this.#started);
  }
}
