// POST /v1/namespaces/{ns}/claims, the claim API's hot path, served on
// Node's own request and response ahead of the Hono app: no Web Request or
// Response, no router, no context. The server hands it exactly that path
// (no query string, no percent-encoding, no trailing slash, no segment a URL
// parser rewrites); anything else, such a create included, is the app's,
// which serves it with the same code.
// The rules are the route's, not a copy: the access the route declares
// (ClaimCallers with CREATE_VERB, before a byte of the body is read), the
// body cap and createClaimBodySchema, createClaim, and the app's error
// answers (errorReply). test/http/create-paths.test.ts runs the create cases
// on both paths.
import { CLAIMREF_GENERATED_HEADER, type ClaimBody } from '@warmpool/api';
import {
  describeIssue,
  incomingHeader,
  readIncomingJson,
  TOO_LARGE,
  UNREADABLE,
  type AheadOfApp,
  type Logger,
} from '@warmpool/runtime';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ClaimCallers } from './access.js';
import { errorReply, failureReply, isRefusal, type FailureReply } from './answers.js';
import { createClaimBodySchema } from './create-body.js';
import { ResponseGone } from './response-gone.js';
import { CREATE_VERB, INVALID_BODY, MAX_BODY_BYTES, createClaim, type CreateOptions } from './create.js';

/**
 * The create path exactly, its namespace segment captured. Whatever the app's URL parser would rewrite is the app's,
 * so both answer alike: a segment with `%` (decoded there), an empty, `.` or `..` segment (it routes elsewhere), a
 * backslash (a separator to the WHATWG parser).
 */
const CREATE_PATH = /^\/v1\/namespaces\/(?!\.\.?\/)([^/\\%?#]+)\/claims$/;

export function directCreate(callers: ClaimCallers, options: CreateOptions, logger: Logger): AheadOfApp {
  return (incoming, outgoing) => {
    if (incoming.method !== 'POST') return false;
    const namespace = CREATE_PATH.exec(incoming.url ?? '')?.[1];
    if (namespace === undefined) return false;
    serve(incoming, outgoing, namespace)
      .catch((err: unknown) => errorReply(err, logger, { method: 'POST', path: incoming.url ?? '' }))
      .then((answer) => write(outgoing, answer))
      // Nothing is left to answer with (Node refused the write): the connection goes, so the caller is not left hanging.
      .catch((err: unknown) => outgoing.destroy(err instanceof Error ? err : undefined));
    return true;
  };

  async function serve(
    incoming: IncomingMessage,
    outgoing: ServerResponse,
    rawNamespace: string,
  ): Promise<CreateAnswer> {
    const caller = await callers.identify(incomingHeader(incoming, 'authorization'), incoming.socket);
    if (isRefusal(caller)) return failureReply(caller.refused, caller.error);
    const namespace = await callers.admit(caller, rawNamespace, CREATE_VERB);
    if (typeof namespace !== 'string') return failureReply(namespace.refused, namespace.error);
    const json = await new Promise<unknown>((resolve) => readIncomingJson(incoming, MAX_BODY_BYTES, resolve));
    if (json === TOO_LARGE || json === UNREADABLE) return failureReply('BadRequest', INVALID_BODY);
    const body = createClaimBodySchema.safeParse(json);
    if (!body.success) return failureReply('BadRequest', describeIssue(body.error, INVALID_BODY));
    const served = await createClaim(
      {
        caller,
        namespace,
        body: body.data,
        claimRefGenerated: incomingHeader(incoming, CLAIMREF_GENERATED_HEADER),
        givenUp: new ResponseGone(outgoing),
      },
      options,
    );
    return isRefusal(served) ? failureReply(served.refused, served.error) : { status: 200, headers: {}, body: served };
  }
}

type CreateAnswer = FailureReply | { status: 200; headers: Record<string, never>; body: ClaimBody };

/** The answer as Hono's c.json writes it; a response whose connection is gone takes nothing. */
function write(outgoing: ServerResponse, { status, headers, body }: CreateAnswer): void {
  if (outgoing.headersSent || outgoing.destroyed) return;
  const json = JSON.stringify(body);
  outgoing.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(json),
    ...headers,
  });
  outgoing.end(json);
}
