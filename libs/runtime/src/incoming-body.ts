// A request body read straight off Node's IncomingMessage: for a hot path that
// answers without building Web Request/Response objects (the node agent's
// claim), and for readJsonBody (./request.ts) whenever the app is served by
// @hono/node-server. The size rules, in one place:
//
// - a declared Content-Length over the cap is refused without reading a byte;
// - a body without one (chunked) is read until it passes the cap, and not one
//   chunk further: reading stops there and the request is left paused.
//
// Either way the body is left unread, and the server (./http.ts) answers with
// `Connection: close` and closes the connection after the answer, so the rest
// of an oversized body is never read, neither by the app nor by Node draining
// it for keep-alive.
import type { IncomingMessage } from 'node:http';

// As the other routes decode (Hono's text() on @hono/node-server): a UTF-8 BOM is dropped, bad bytes become U+FFFD.
const decoder = new TextDecoder();

/** Not JSON, empty, or broken off: the caller answers 400 `invalid request body`. */
export const UNREADABLE = Symbol('unreadable body');
/**
 * Over the cap (declared or read): the caller answers 400 `invalid request body`; the connection is closed after it.
 */
export const TOO_LARGE = Symbol('body too large');

export type IncomingBody = Buffer | typeof TOO_LARGE | typeof UNREADABLE;

/** Whether a body larger than `maxBytes` is declared (a Content-Length without Transfer-Encoding). */
function declaresTooMuch(incoming: IncomingMessage, maxBytes: number): boolean {
  const declared = incoming.headers['content-length'];
  if (declared === undefined || incoming.headers['transfer-encoding'] !== undefined) return false;
  const length = Number(declared);
  return !Number.isSafeInteger(length) || length > maxBytes;
}

/** Calls `done` once: the whole body (empty when there is none), TOO_LARGE, or UNREADABLE when the client went away. */
export function readIncomingBody(
  incoming: IncomingMessage,
  maxBytes: number,
  done: (body: IncomingBody) => void,
): void {
  if (declaresTooMuch(incoming, maxBytes)) {
    done(TOO_LARGE);
    return;
  }
  // Its client went away before the body was asked for (while the caller was reviewed, say): the request has
  // closed already, so none of the events below will ever come.
  if (incoming.destroyed) {
    done(UNREADABLE);
    return;
  }
  let first: Buffer | undefined;
  let more: Buffer[] | undefined;
  let size = 0;
  let settled = false;
  const settle = (body: IncomingBody): void => {
    if (settled) return;
    settled = true;
    done(body);
  };
  const onData = (chunk: Buffer): void => {
    size += chunk.byteLength;
    if (size <= maxBytes) {
      if (first === undefined) first = chunk;
      else (more ??= [first]).push(chunk);
      return;
    }
    // Past the cap: not one byte more is read, and what was kept goes.
    incoming.off('data', onData);
    incoming.pause();
    first = undefined;
    more = undefined;
    settle(TOO_LARGE);
  };
  incoming.on('data', onData);
  incoming.on('end', () => {
    if (first === undefined) settle(Buffer.alloc(0));
    else settle(more === undefined ? first : Buffer.concat(more));
  });
  // A client that goes away mid-body: nobody is left to answer, but the read must still end. (Node
  // emits 'error' on the request only to listeners; 'close' always comes, after 'end' when there was one.)
  incoming.on('close', () => settle(UNREADABLE));
}

/** Decodes a body as UTF-8 text, the way Hono's text() does. */
export function decodeBody(body: Buffer): string {
  return decoder.decode(body);
}

/**
 * Calls `done` once, with the body parsed as JSON, TOO_LARGE, or UNREADABLE
 * (an empty body is UNREADABLE too: it is not JSON).
 */
export function readIncomingJson(incoming: IncomingMessage, maxBytes: number, done: (json: unknown) => void): void {
  readIncomingBody(incoming, maxBytes, (body) => {
    if (typeof body === 'symbol') {
      done(body);
      return;
    }
    if (body.byteLength === 0) {
      done(UNREADABLE);
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(decoder.decode(body));
    } catch {
      json = UNREADABLE;
    }
    done(json);
  });
}

/** An unread body declared this small is cheaper to read for keep-alive than a new connection. */
const DRAINABLE_BYTES = 64 * 1024;

/**
 * Whether the request's body is still (partly) unread and may be large: an
 * answer written now must close the connection, or Node would read the rest
 * to keep it alive. A request that declares no body has none to read; one
 * that declares a small one (a release sent with `{}`) keeps its connection.
 */
export function bodyLeftUnread(incoming: IncomingMessage): boolean {
  if (incoming.complete) return false;
  const { headers } = incoming;
  if (headers['transfer-encoding'] !== undefined) return true;
  const declared = headers['content-length'];
  if (declared === undefined) return false;
  const length = Number(declared);
  return !Number.isSafeInteger(length) || length > DRAINABLE_BYTES;
}
