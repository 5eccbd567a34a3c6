// Reading requests at the edge, once for every app: headers without building a
// WHATWG Headers object, and JSON bodies that are size-capped, parsed and
// validated with a one-line reason for the 400.
import type { HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';
import type { IncomingMessage } from 'node:http';
import type { z } from 'zod';
import { decodeBody, readIncomingBody, TOO_LARGE, UNREADABLE, type IncomingBody } from './incoming-body.js';

/**
 * `name` (lower case) from Node's own parsed headers when the app runs on
 * @hono/node-server: `c.req.header()` would first copy every header into a
 * Headers object, which a hot path does not need. Elsewhere (app.request() in
 * a test) it goes through Hono.
 */
export function requestHeader(c: Context, name: string): string | undefined {
  const incoming = (c.env as Partial<HttpBindings> | undefined)?.incoming;
  return incoming === undefined ? c.req.header(name) : incomingHeader(incoming, name);
}

/**
 * The connection (Node's socket) a request came on when the app runs on @hono/node-server, for checks that remember
 * something per keep-alive connection; undefined elsewhere (app.request() in a test), where such a check runs in full.
 */
export function requestConnection(c: Context): object | undefined {
  return (c.env as Partial<HttpBindings> | undefined)?.incoming?.socket;
}

/** Header `name` (lower case) of a request served on Node's own objects, as requestHeader reads it there. */
export function incomingHeader(incoming: IncomingMessage, name: string): string | undefined {
  const value = incoming.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Why a body was refused: `too_large` (over maxBytes; the connection is
 * closed after the answer, see ./incoming-body.ts), `unreadable` (not JSON,
 * or empty where that is not allowed), `invalid` (fails the schema).
 */
export type BodyProblem = 'too_large' | 'unreadable' | 'invalid';

export type BodyResult<T> = { ok: true; value: T } | { ok: false; error: string; problem: BodyProblem };

/**
 * What a body is validated with: a zod schema, or anything that answers safeParse as one does (e.g. a faster check of
 * the same rules).
 */
export interface BodySchema<T> {
  safeParse(value: unknown): z.ZodSafeParseResult<T>;
}

export interface JsonBodyOptions {
  maxBytes: number;
  /** The answer for a body that is too large or not JSON. */
  invalidMessage: string;
  /** Stands in for an empty body where every field may be absent (e.g. renew). */
  emptyAs?: unknown;
}

/** `pools.0.warm: warm must not be negative`: the first issue, with where it is. */
export function describeIssue(error: z.ZodError, fallback: string): string {
  const issue = error.issues[0];
  if (issue === undefined) return fallback;
  const path = issue.path.map(String).join('.');
  return path === '' ? issue.message : `${path}: ${issue.message}`;
}

/**
 * The body as bytes, TOO_LARGE, or UNREADABLE (the client went away). Served
 * by @hono/node-server it is read off Node's request with the rules of
 * ./incoming-body.ts, never past the cap; elsewhere (app.request() in a test)
 * off the Web stream, with the same cap.
 */
export async function readBodyBytes(
  c: Context,
  maxBytes: number,
): Promise<Buffer | typeof TOO_LARGE | typeof UNREADABLE> {
  const incoming = (c.env as Partial<HttpBindings> | undefined)?.incoming;
  if (incoming !== undefined)
    return new Promise<IncomingBody>((resolve) => readIncomingBody(incoming, maxBytes, resolve));
  const declared = c.req.header('content-length');
  if (declared !== undefined && c.req.header('transfer-encoding') === undefined) {
    const length = Number(declared);
    return Number.isSafeInteger(length) && length <= maxBytes ? Buffer.from(await c.req.arrayBuffer()) : TOO_LARGE;
  }
  const stream = c.req.raw.body;
  if (stream === null) return Buffer.alloc(0);
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      void reader.cancel().catch(() => undefined);
      return TOO_LARGE;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

async function readCapped(c: Context, maxBytes: number): Promise<string | typeof TOO_LARGE | typeof UNREADABLE> {
  const body = await readBodyBytes(c, maxBytes);
  return typeof body === 'symbol' ? body : decodeBody(body);
}

/** Read, parse and validate a JSON body. */
export async function readJsonBody<T>(
  c: Context,
  schema: BodySchema<T>,
  options: JsonBodyOptions,
): Promise<BodyResult<T>> {
  const unreadable = { ok: false, error: options.invalidMessage, problem: 'unreadable' } as const;
  let json: unknown;
  try {
    const text = await readCapped(c, options.maxBytes);
    if (text === TOO_LARGE) return { ok: false, error: options.invalidMessage, problem: 'too_large' };
    if (text === UNREADABLE) return unreadable;
    json = options.emptyAs !== undefined && text.trim() === '' ? options.emptyAs : JSON.parse(text);
  } catch {
    return unreadable;
  }
  const parsed = schema.safeParse(json);
  return parsed.success
    ? { ok: true, value: parsed.data }
    : { ok: false, error: describeIssue(parsed.error, options.invalidMessage), problem: 'invalid' };
}
