// A request body read straight off Node's IncomingMessage, for a hot path that
// answers without building Web Request/Response objects (the node agent's
// claim). The size rules are readJsonBody's (./request.ts), which every other
// route uses; they live side by side so they change together:
//
// - a declared Content-Length over the cap is refused without reading a byte
//   (the Node server discards the body after the answer; its HTTP parser holds
//   the client to the declared length);
// - a body without one (chunked) is read and thrown away once over the cap,
//   up to 16 × the cap, past which reading stops and the connection is given
//   up (@hono/node-server drains, then closes it, after the answer).
import type { IncomingMessage } from 'node:http';

// As the other routes decode (Hono's text() on @hono/node-server): a UTF-8 BOM is dropped, bad bytes become U+FFFD.
const decoder = new TextDecoder();

/** Too large, not JSON, or broken off: the caller answers 400 `invalid request body`. */
export const UNREADABLE = Symbol('unreadable body');

/**
 * Calls `done` once, with the body parsed as JSON, or UNREADABLE. An empty
 * body is UNREADABLE too (it is not JSON).
 */
export function readIncomingJson(incoming: IncomingMessage, maxBytes: number, done: (json: unknown) => void): void {
  const declared = incoming.headers['content-length'];
  if (declared !== undefined && incoming.headers['transfer-encoding'] === undefined) {
    const length = Number(declared);
    if (!Number.isSafeInteger(length) || length > maxBytes) {
      done(UNREADABLE);
      return;
    }
  }
  let first: Buffer | undefined;
  let more: Buffer[] | undefined;
  let size = 0;
  let settled = false;
  const settle = (json: unknown): void => {
    if (settled) return;
    settled = true;
    done(json);
  };
  const onData = (chunk: Buffer): void => {
    size += chunk.byteLength;
    if (size <= maxBytes) {
      if (first === undefined) first = chunk;
      else (more ??= [first]).push(chunk);
    } else if (size > 16 * maxBytes) {
      incoming.off('data', onData);
      incoming.pause();
      settle(UNREADABLE);
    }
  };
  incoming.on('data', onData);
  incoming.on('end', () => {
    if (size > maxBytes || first === undefined) {
      settle(UNREADABLE);
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(decoder.decode(more === undefined ? first : Buffer.concat(more)));
    } catch {
      json = UNREADABLE;
    }
    settle(json);
  });
  // A client that goes away mid-body: nobody is left to answer, but the read must still end. (Node
  // emits 'error' on the request only to listeners; 'close' always comes, after 'end' when there was one.)
  incoming.on('close', () => settle(UNREADABLE));
}
