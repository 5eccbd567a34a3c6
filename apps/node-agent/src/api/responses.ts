// What the agent answers, as plain data (a Reply) that becomes either a
// Response for Hono, or a direct write on Node's response on the claim path.
// Both carry a plain header object and a string or byte body, which
// @hono/node-server writes on its fast path.
import type { ServerResponse } from 'node:http';
import type { AgentErrorBody, AgentErrorReason } from '@warmpool/api';
import type { SandboxdAnswer } from '../sandboxd/client.js';
import type { SandboxdUnavailableError } from '../sandboxd/errors.js';

const JSON_TYPE = 'application/json';

export interface Reply {
  status: number;
  headers: Record<string, string>;
  /** null for no body (204). */
  body: string | Uint8Array | null;
}

export function jsonReply(status: number, body: unknown, headers?: Record<string, string>): Reply {
  return { status, headers: { 'content-type': JSON_TYPE, ...headers }, body: JSON.stringify(body) };
}

/** `{"error": message, "reason": reason}`: sandboxd's error shape, plus the agent's machine-readable reason. */
export function errorReply(
  status: number,
  reason: AgentErrorReason,
  message: string,
  extra?: Record<string, unknown>,
  headers?: Record<string, string>,
): Reply {
  const body: AgentErrorBody = { error: message, reason, ...extra };
  return jsonReply(status, body, headers);
}

/** sandboxd's answer as it came: its status, its bytes, its content type (and Retry-After, if any). */
export function passThroughReply(answer: SandboxdAnswer): Reply {
  const empty = answer.status === 204 || answer.status === 304 || answer.body.byteLength === 0;
  const headers: Record<string, string> = empty ? {} : { 'content-type': answer.contentType ?? JSON_TYPE };
  if (answer.retryAfter !== undefined) headers['retry-after'] = answer.retryAfter;
  return { status: answer.status, headers, body: empty ? null : answer.body };
}

/**
 * passThroughReply(answer) written on Node's response, without the Reply and the header objects in between: the
 * claim's direct path writes every answer so.
 */
export function writePassThrough(outgoing: ServerResponse, answer: SandboxdAnswer): void {
  const { status, body, retryAfter } = answer;
  if (status === 204 || status === 304 || body.byteLength === 0) {
    outgoing.writeHead(status, retryAfter === undefined ? {} : { 'retry-after': retryAfter });
    outgoing.end();
    return;
  }
  const contentType = answer.contentType ?? JSON_TYPE;
  const length = body.byteLength;
  outgoing.writeHead(
    status,
    retryAfter === undefined
      ? { 'content-type': contentType, 'content-length': length }
      : { 'content-type': contentType, 'retry-after': retryAfter, 'content-length': length },
  );
  outgoing.end(body);
}

/**
 * No answer from sandboxd. Not sent (unreachable, or no connection free in
 * time): 503 with Retry-After, a retry is safe. Sent and then no answer: 504
 * (timed out) or 502 (connection lost), the outcome unknown and no
 * Retry-After, since a blind retry of a claim could claim twice.
 */
export function unavailableReply(err: SandboxdUnavailableError): Reply {
  switch (err.kind) {
    case 'unreachable':
      return errorReply(503, 'SandboxdUnreachable', `${err.message}; the call was not sent, retry`, undefined, {
        'retry-after': '1',
      });
    case 'busy':
      return errorReply(503, 'SandboxdBusy', `${err.message}, retry`, undefined, { 'retry-after': '1' });
    case 'timeout':
    case 'connection_lost': {
      const lookUp =
        err.operation === 'claim'
          ? '; a claim sent with a claim_ref can be looked up with GET /v1/sandboxes?claim_ref= before claiming again'
          : '';
      return errorReply(
        err.kind === 'timeout' ? 504 : 502,
        'OutcomeUnknown',
        `${err.message}; the call may have taken effect on the node (outcome unknown)${lookUp}`,
      );
    }
  }
}

export function toResponse(reply: Reply): Response {
  return new Response(reply.body, { status: reply.status, headers: reply.headers });
}

/** The reply written on Node's response: for handlers that answer without building a Response. */
export function writeReply(outgoing: ServerResponse, reply: Reply): void {
  const { body } = reply;
  if (body === null) {
    outgoing.writeHead(reply.status, reply.headers);
    outgoing.end();
    return;
  }
  const length = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
  outgoing.writeHead(reply.status, { ...reply.headers, 'content-length': length });
  outgoing.end(body);
}

/**
 * Writes an answer on Node's response with `write` and gives the status answered, never throwing: an answer Node
 * will not write (say, a header sandboxd sent that Node finds invalid) is answered with `failure(err)` instead, or,
 * with the head already out, ends the connection (node-server's own rule).
 */
export function writeOrFail(
  outgoing: ServerResponse,
  status: number,
  write: () => void,
  failure: (err: unknown) => Reply,
): number {
  try {
    write();
    return status;
  } catch (err) {
    const answer = failure(err);
    if (!outgoing.headersSent) writeReply(outgoing, answer);
    else outgoing.destroy(err as Error);
    return answer.status;
  }
}

export function jsonResponse(status: number, body: unknown, headers?: Record<string, string>): Response {
  return toResponse(jsonReply(status, body, headers));
}

export function errorResponse(
  status: number,
  reason: AgentErrorReason,
  message: string,
  extra?: Record<string, unknown>,
  headers?: Record<string, string>,
): Response {
  return toResponse(errorReply(status, reason, message, extra, headers));
}

export function passThrough(answer: SandboxdAnswer): Response {
  return toResponse(passThroughReply(answer));
}
