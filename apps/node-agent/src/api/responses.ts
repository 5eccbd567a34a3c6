// What the agent answers, as plain data (a Reply) that becomes either a
// Response for Hono, or a direct write on Node's response on the claim path.
// Both carry a plain header object and a string or byte body, which
// @hono/node-server writes on its fast path.
import type { ServerResponse } from 'node:http';
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

/** `{"error": message}`, the error shape sandboxd uses too. */
export function errorReply(status: number, message: string, extra?: Record<string, unknown>, headers?: Record<string, string>): Reply {
  return jsonReply(status, { error: message, ...extra }, headers);
}

/** sandboxd's answer as it came: its status, its bytes, its content type (and Retry-After, if any). */
export function passThroughReply(answer: SandboxdAnswer): Reply {
  const empty = answer.status === 204 || answer.status === 304 || answer.body.byteLength === 0;
  const headers: Record<string, string> = empty ? {} : { 'content-type': answer.contentType ?? JSON_TYPE };
  if (answer.retryAfter !== undefined) headers['retry-after'] = answer.retryAfter;
  return { status: answer.status, headers, body: empty ? null : answer.body };
}

/** No answer from sandboxd: 503 when it could not be reached, 504 when it did not answer in time. */
export function unavailableReply(err: SandboxdUnavailableError): Reply {
  if (err.kind === 'timeout') {
    return errorReply(504, `${err.message}; the call may still have taken effect on the node`);
  }
  return errorReply(503, err.message, undefined, { 'retry-after': '1' });
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

export function jsonResponse(status: number, body: unknown, headers?: Record<string, string>): Response {
  return toResponse(jsonReply(status, body, headers));
}

export function errorResponse(status: number, message: string, extra?: Record<string, unknown>, headers?: Record<string, string>): Response {
  return toResponse(errorReply(status, message, extra, headers));
}

export function passThrough(answer: SandboxdAnswer): Response {
  return toResponse(passThroughReply(answer));
}
