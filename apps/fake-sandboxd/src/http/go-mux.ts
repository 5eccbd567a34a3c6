// The answers of Go's http.ServeMux for a request no route takes, which is
// what sandboxd serves them with: a path no pattern matches gets a plain-text
// 404, a path a pattern matches under other methods a plain-text 405 with
// `Allow`. A client must not expect a JSON error body there — an older daemon
// answers a route it does not have (renew) exactly so.
import type { Context } from 'hono';

interface Route {
  readonly pattern: RegExp;
  readonly methods: Set<string>;
}

/** `/v1/sandboxes/:id/renew` → a regular expression where `:id` is one non-empty path segment. */
function patternOf(path: string): RegExp {
  const source = path
    .split('/')
    .map((segment) => (segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}$`);
}

const PLAIN = { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' };

export class GoMuxFallback {
  readonly #routes = new Map<string, Route>();

  /** Record a route the app serves, so a request with another method on its path is told 405. */
  add(method: string, path: string): void {
    let route = this.#routes.get(path);
    if (route === undefined) this.#routes.set(path, (route = { pattern: patternOf(path), methods: new Set() }));
    route.methods.add(method);
    // Go's mux serves HEAD wherever it serves GET.
    if (method === 'GET') route.methods.add('HEAD');
  }

  /** The answer for a request no route took. */
  answer(c: Context): Response {
    const allowed = new Set<string>();
    for (const route of this.#routes.values()) {
      if (route.pattern.test(c.req.path)) for (const m of route.methods) allowed.add(m);
    }
    if (allowed.size === 0) return c.text('404 page not found\n', 404, PLAIN);
    return c.text('Method Not Allowed\n', 405, { ...PLAIN, allow: [...allowed].sort().join(', ') });
  }
}
