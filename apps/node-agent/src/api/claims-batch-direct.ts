// POST /v1/claims on Node's own request and response, as POST /v1/claim is
// (claim-route.ts): no Web Request, no Web stream for the answer, no router.
// The rules are the route's (claims-batch-route.ts): the declared access
// before a byte of the body is read, the 1 MiB body, the envelope judged
// first (a malformed one is one 400 and claims nothing), then every item run
// by claimOne and its line written as it is answered (claims-batch-lines.ts).
import { agentBatchClaimEnvelopeSchema, INVALID_BODY_MESSAGE, MAX_BODY_BYTES } from '@warmpool/api';
import { readIncomingJson, TOO_LARGE, UNREADABLE } from '@warmpool/runtime';
import type { ServerResponse } from 'node:http';
import { claimOne, type ClaimOneDependencies } from './claim-one.js';
import type { DirectClaimHandler } from './claim-route.js';
import { RESULT_HEADERS, writeResultLines } from './claims-batch-lines.js';
import { errorReply, writeOrFail, writeReply, type Reply } from './responses.js';
import { parseBody } from './strict-body.js';

export interface DirectClaimsDependencies {
  /** The route's declared access applied to the Authorization header sent on `connection`: undefined to admit. */
  admit(authorization: string | undefined, connection: object): Reply | undefined;
  /** How every item is claimed. */
  one: ClaimOneDependencies;
  /** Every item's reply, timed from the start of the request (counted as a claim). */
  observeItem(status: number, startedMs: number): void;
  /** The request's own answer (200 once the lines start, or its refusal), as the route's metrics count it. */
  observeRequest(status: number, startedMs: number): void;
}

export function directClaims(deps: DirectClaimsDependencies): DirectClaimHandler {
  return (incoming, outgoing) => {
    const started = performance.now();
    // Never throws (it runs where nothing above would catch).
    const reply = (answer: Reply): void =>
      deps.observeRequest(
        writeOrFail(outgoing, answer.status, () => writeReply(outgoing, answer), deps.one.failure),
        started,
      );
    try {
      const refused = deps.admit(incoming.headers.authorization, incoming.socket);
      if (refused !== undefined) return reply(refused);
      readIncomingJson(incoming, MAX_BODY_BYTES, (json) => {
        // Runs from the request's 'end' event: nothing above it would catch a throw.
        try {
          serveBody(json, outgoing, started, deps, reply);
        } catch (err) {
          failed(outgoing, deps.one.failure(err), reply);
        }
      });
    } catch (err) {
      failed(outgoing, deps.one.failure(err), reply);
    }
  };
}

function serveBody(
  json: unknown,
  outgoing: ServerResponse,
  started: number,
  deps: DirectClaimsDependencies,
  reply: (answer: Reply) => void,
): void {
  if (json === TOO_LARGE || json === UNREADABLE) {
    reply(errorReply(400, json === TOO_LARGE ? 'BodyTooLarge' : 'InvalidBody', INVALID_BODY_MESSAGE));
    return;
  }
  const envelope = parseBody(agentBatchClaimEnvelopeSchema, json);
  if (!envelope.ok) {
    reply(envelope.reply);
    return;
  }
  const replies = envelope.value.claims.map((item) =>
    claimOne(deps.one, item).then((answer) => {
      deps.observeItem(answer.status, started);
      return answer;
    }),
  );
  outgoing.writeHead(200, RESULT_HEADERS);
  deps.observeRequest(200, started);
  // The response closes early only when the caller hung up (or Node gave the connection up).
  let gone = false;
  outgoing.once('close', () => (gone = !outgoing.writableFinished));
  writeResultLines(replies, {
    write: (chunk) => outgoing.write(chunk),
    end: () => outgoing.end(),
    gone: () => gone || outgoing.destroyed,
  });
}

/** A failure before the lines started is its reply; after, the connection goes (the lines cannot say it). */
function failed(outgoing: ServerResponse, failure: Reply, reply: (answer: Reply) => void): void {
  if (!outgoing.headersSent) reply(failure);
  else outgoing.destroy();
}
