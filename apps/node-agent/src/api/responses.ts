// Responses built directly (not through Hono's Context) so @hono/node-server
// can write them on its fast path: a plain header object and a string or
// byte body.
import type { SandboxdAnswer } from '../sandboxd/client.js';
import type { SandboxdUnavailableError } from '../sandboxd/errors.js';

const JSON_TYPE = 'application/json';

export function jsonResponse(status: number, body: unknown, headers?: Record<string, string>): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': JSON_TYPE, ...headers } });
}

/** `{"error": message}`, the error shape sandboxd uses too. */
export function errorResponse(status: number, message: string, extra?: Record<string, unknown>, headers?: Record<string, string>): Response {
  return jsonResponse(status, { error: message, ...extra }, headers);
}

/** sandboxd's answer as it came: its status, its bytes, its content type (and Retry-After, if any). */
export function passThrough(answer: SandboxdAnswer): Response {
  const empty = answer.status === 204 || answer.status === 304 || answer.body.byteLength === 0;
  const headers: Record<string, string> = empty ? {} : { 'content-type': answer.contentType ?? JSON_TYPE };
  if (answer.retryAfter !== undefined) headers['retry-after'] = answer.retryAfter;
  return new Response(empty ? null : answer.body, { status: answer.status, headers });
}

/** No answer from sandboxd: 503 when it could not be reached, 504 when it did not answer in time. */
export function unavailableResponse(err: SandboxdUnavailableError): Response {
  if (err.kind === 'timeout') {
    return errorResponse(504, `${err.message}; the call may still have taken effect on the node`);
  }
  return errorResponse(503, err.message, undefined, { 'retry-after': '1' });
}
