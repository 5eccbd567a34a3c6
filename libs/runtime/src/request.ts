// Reading requests at the edge, once for every app: headers without building a
// WHATWG Headers object, and JSON bodies that are size-capped, parsed and
// validated with a one-line reason for the 400.
import type { HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';
import type { z } from 'zod';

/**
 * `name` (lower case) from Node's own parsed headers when the app runs on
 * @hono/node-server: `c.req.header()` would first copy every header into a
 * Headers object, which a hot path does not need. Elsewhere (app.request() in
 * a test) it goes through Hono.
 */
export function requestHeader(c: Context, name: string): string | undefined {
  const incoming = (c.env as Partial<HttpBindings> | undefined)?.incoming;
  if (incoming === undefined) return c.req.header(name);
  const value = incoming.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export type BodyResult<T> = { ok: true; value: T } | { ok: false; error: string };

/** What a body is validated with: a zod schema, or anything that answers safeParse as one does (e.g. a faster check of the same rules). */
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
 * The body as text, or undefined when it exceeds maxBytes. An oversized body
 * is never buffered, but it is not left half read either — a client still
 * sending would see its connection cut instead of the 400. A declared
 * Content-Length over the limit is never touched (the Node server discards it
 * after the answer; its HTTP parser holds the client to the declared length);
 * a chunked one is read on and thrown away up to 16 × maxBytes, past which the
 * connection is given up.
 */
async function readCapped(c: Context, maxBytes: number): Promise<string | undefined> {
  const declared = requestHeader(c, 'content-length');
  if (declared !== undefined && requestHeader(c, 'transfer-encoding') === undefined) {
    const length = Number(declared);
    return Number.isSafeInteger(length) && length <= maxBytes ? c.req.text() : undefined;
  }
  const stream = c.req.raw.body;
  if (stream === null) return '';
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size <= maxBytes) chunks.push(value);
    else if (size > 16 * maxBytes) {
      await reader.cancel();
      return undefined;
    }
  }
  return size > maxBytes ? undefined : Buffer.concat(chunks).toString('utf8');
}

/** Read, parse and validate a JSON body. */
export async function readJsonBody<T>(c: Context, schema: BodySchema<T>, options: JsonBodyOptions): Promise<BodyResult<T>> {
  const invalid = { ok: false, error: options.invalidMessage } as const;
  let json: unknown;
  try {
    const text = await readCapped(c, options.maxBytes);
    if (text === undefined) return invalid;
    json = options.emptyAs !== undefined && text.trim() === '' ? options.emptyAs : JSON.parse(text);
  } catch {
    return invalid;
  }
  const parsed = schema.safeParse(json);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, error: describeIssue(parsed.error, options.invalidMessage) };
}
