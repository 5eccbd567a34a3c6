// The answers of Go's http.ServeMux for a request no route takes, which is
// what sandboxd serves them with: a path no pattern matches gets a plain-text
// 404, a path a pattern matches under other methods a plain-text 405 with
// `Allow`. A client must not expect a JSON error body there — an older daemon
// answers a route it does not have (renew) exactly so. Which methods a path
// has comes from the app's own route table (libs/runtime methodNotAllowed).
import { methodNotAllowed } from '@warmpool/runtime';
import type { Context, Hono } from 'hono';
import type { Env } from 'hono/types';

const PLAIN = { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' };

/** The not-found handler of an app whose every route is registered: Go's plain-text 404 or 405. */
export function goMuxFallback<E extends Env>(app: Hono<E>): (c: Context<E>) => Response {
  let allowed: ((path: string) => string | undefined) | undefined;
  return (c) => {
    allowed ??= methodNotAllowed(app.routes);
    const allow = allowed(c.req.path);
    if (allow === undefined) return c.text('404 page not found\n', 404, PLAIN);
    return c.text('Method Not Allowed\n', 405, { ...PLAIN, allow });
  };
}
