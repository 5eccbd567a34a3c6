// Who may call each route of a front door, declared once where the route is
// registered, and deny by default. A route's first handler is its access:
// `open` (no credential), `authenticated` (any caller the door recognizes) or
// `allow(verb)` (that caller, and a SubjectAccessReview allowing the verb on
// what the route's path addresses). `assertDeclared` refuses to let an app be
// served with a route that declares none, so no route can skip the check; a
// path no route serves falls to the door's catch-all, which is
// `authenticated` too (a stranger learns nothing, not even which paths exist).
import type { Context, Env, Hono, MiddlewareHandler } from 'hono';

/** How a front door tells who calls and what they may do; each answers in its own error shape. */
export interface Doorkeeper<E extends Env, V extends string> {
  /** Recognizes the caller (kept in the context for the route), or answers the refusal. */
  authenticate(c: Context<E>): Promise<Response | undefined>;
  /** Whether the recognized caller may `verb` what the route's path names, or the refusal. */
  authorize(c: Context<E>, verb: V): Promise<Response | undefined>;
}

export class RouteAccess<E extends Env, V extends string> {
  readonly #door: Doorkeeper<E, V>;
  readonly #declarations = new WeakSet<MiddlewareHandler<E>>();
  readonly #aroundEvery = new WeakSet<MiddlewareHandler<E>>();
  /** Anyone, no credential asked. */
  readonly open: MiddlewareHandler<E>;
  /** Any caller the door recognizes. */
  readonly authenticated: MiddlewareHandler<E>;

  constructor(door: Doorkeeper<E, V>) {
    this.#door = door;
    this.open = this.#declare(async (_c, next) => {
      await next();
    });
    this.authenticated = this.#declare(async (c, next) => {
      const refused = await door.authenticate(c);
      if (refused !== undefined) return refused;
      await next();
    });
  }

  /** A recognized caller whom the apiserver allows `verb` (or the verb the request asks for, e.g. list or watch). */
  allow(verb: V | ((c: Context<E>) => V)): MiddlewareHandler<E> {
    const door = this.#door;
    return this.#declare(async (c, next) => {
      const refused =
        (await door.authenticate(c)) ?? (await door.authorize(c, typeof verb === 'function' ? verb(c) : verb));
      if (refused !== undefined) return refused;
      await next();
    });
  }

  /** A middleware around every request (timing, say), registered with `app.use`: it grants nothing itself. */
  aroundEvery(handler: MiddlewareHandler<E>): MiddlewareHandler<E> {
    this.#aroundEvery.add(handler);
    return handler;
  }

  /**
   * Throws unless every route of `app` starts with an access of this door, past the middlewares around every request
   * (call once every route is added).
   */
  assertDeclared(app: Hono<E>): void {
    const first = new Map<string, MiddlewareHandler<E>>();
    for (const route of app.routes) {
      const key = `${route.method} ${route.path}`;
      const handler = route.handler as MiddlewareHandler<E>;
      if (!first.has(key) && !this.#aroundEvery.has(handler)) first.set(key, handler);
    }
    const undeclared = [...first].filter(([, handler]) => !this.#declarations.has(handler)).map(([key]) => key);
    if (undeclared.length > 0) throw new Error(`routes without a declared access: ${undeclared.join(', ')}`);
  }

  #declare(handler: MiddlewareHandler<E>): MiddlewareHandler<E> {
    this.#declarations.add(handler);
    return handler;
  }
}
