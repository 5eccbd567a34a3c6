// Reading a request header without building a WHATWG Headers object: on
// @hono/node-server the first `c.req.header()` copies every header of the
// request into one, which the claim path does not need. Node's own parsed
// headers are used when the app runs on it; anything else (app.request() in a
// test) goes through Hono.
import type { HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';

/** `name` in lower case. */
export function requestHeader(c: Context, name: string): string | undefined {
  const incoming = (c.env as Partial<HttpBindings> | undefined)?.incoming;
  if (incoming === undefined) return c.req.header(name);
  const value = incoming.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
