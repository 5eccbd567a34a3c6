// Which methods a path is served with, for the 405 a known path answers to
// any other method. Read from the app's own route table after every route is
// registered, so it cannot drift from what is served; and asked only once no
// route matched, so it costs the routes nothing.
import type { RouterRoute } from 'hono/types';

/** `:param` segments match any one segment, as Hono's router does for these plain patterns. */
function patternOf(path: string): RegExp {
  const source = path
    .split('/')
    .map((segment) => (segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}$`);
}

/** A lookup: the `Allow` header value for a path that is served with other methods, undefined for an unknown path. */
export function methodNotAllowed(routes: readonly RouterRoute[]): (path: string) => string | undefined {
  const byPath = new Map<string, Set<string>>();
  for (const { path, method } of routes) {
    if (method === 'ALL') continue;
    const methods = byPath.get(path) ?? new Set<string>();
    methods.add(method);
    // Hono answers HEAD with the GET route.
    if (method === 'GET') methods.add('HEAD');
    byPath.set(path, methods);
  }
  const table = [...byPath].map(([path, methods]) => ({
    pattern: patternOf(path),
    allow: [...methods].sort().join(', '),
  }));
  return (path) => table.find((entry) => entry.pattern.test(path))?.allow;
}
