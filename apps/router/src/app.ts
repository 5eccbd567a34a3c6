// The router's HTTP surface: upstream agent-sandbox's router routes, each
// declared once below (deny by default: any other path is 404, another method
// 405), and the probes and metrics. A proxied request passes, in order: the
// X-Sandbox-* headers, the operation's path and body size, the caller's
// Kubernetes identity and their right to the Sandbox, the Sandbox's route;
// any refusal answers before a byte reaches a node.
import type { HttpBindings } from '@hono/node-server';
import type { RuntimeOperation } from '@warmpool/api';
import { methodNotAllowed, requestHeader, type Logger } from '@warmpool/runtime';
import { Hono, type Context } from 'hono';
import type { Registry } from 'prom-client';
import type { CallerGate } from './caller.js';
import type { Forwarder } from './forwarder.js';
import type { RouterMetrics } from './metrics.js';
import { declaredTooLarge, operationOf } from './operation.js';
import { proxy } from './proxy.js';
import { Refusal, refusal } from './refusal.js';
import type { SandboxResolver } from './resolver.js';
import { targetOf } from './target.js';

/** The proxied routes, upstream's: one line each. */
const ROUTES: ReadonlyArray<{ method: 'GET' | 'POST'; path: string; operation: RuntimeOperation }> = [
  { method: 'POST', path: '/execute', operation: 'execute' },
  { method: 'POST', path: '/upload', operation: 'upload' },
  { method: 'GET', path: '/download/*', operation: 'download' },
  { method: 'GET', path: '/list/*', operation: 'list' },
  { method: 'GET', path: '/exists/*', operation: 'exists' },
];

export interface RouterAppOptions {
  gate: CallerGate;
  resolver: SandboxResolver;
  forwarder: Forwarder;
  metrics: RouterMetrics;
  registry: Registry;
  /** The port X-Sandbox-Port may name (upstream's runtime port, 8888). */
  runtimePort: number;
  /** The longest a proxied call may take, whatever X-Sandbox-Timeout asks. */
  proxyTimeoutMs: number;
  logger: Logger;
  /** False once the router is closing: /readyz turns 503 so traffic moves away first. */
  ready: () => boolean;
}

export function answerRefusal(c: Context, refused: Refusal): Response {
  return c.json(refused.body, refused.status as 400);
}

export function createRouterApp(options: RouterAppOptions): Hono<{ Bindings: HttpBindings }> {
  const app = new Hono<{ Bindings: HttpBindings }>();
  const { metrics, logger } = options;

  for (const { method, path, operation } of ROUTES) {
    app.on(method, path, async (c) => {
      const started = performance.now();
      const header = (name: string): string | undefined => requestHeader(c, name);
      const refuse = (refused: Refusal): Response => {
        metrics.refused(refused.reason);
        metrics.answered(operation, refused.status, started);
        if (refused.status >= 500) logger.warn('request refused', { operation, ...refused.body });
        else logger.debug('request refused', { operation, ...refused.body });
        return answerRefusal(c, refused);
      };
      const target = targetOf(header, options.runtimePort);
      if (target instanceof Refusal) return refuse(target);
      const op = operationOf(operation, new URL(c.req.url).pathname);
      if (op instanceof Refusal) return refuse(op);
      const oversize = declaredTooLarge(header('content-length'), op);
      if (oversize !== undefined) return refuse(oversize);
      const caller = await options.gate.admit(header('authorization'), target);
      if (caller instanceof Refusal) return refuse(caller);
      return proxy(c, {
        method,
        operation: op,
        target,
        caller: caller.username,
        started,
        header,
        refuse,
        ...options,
      });
    });
  }

  app.get('/healthz', (c) => c.text('ok'));
  app.get('/readyz', (c) => (options.ready() ? c.text('ok') : c.text('closing', 503)));
  app.get('/metrics', async (c) =>
    c.text(await options.registry.metrics(), 200, { 'content-type': options.registry.contentType }),
  );

  let allowed: ((path: string) => string | undefined) | undefined;
  app.notFound((c) => {
    allowed ??= methodNotAllowed(app.routes);
    const allow = allowed(c.req.path);
    metrics.answered('none', allow === undefined ? 404 : 405, performance.now());
    if (allow === undefined)
      return answerRefusal(c, refusal('RouteNotFound', `no route ${c.req.method} ${c.req.path}`));
    c.header('allow', allow);
    return answerRefusal(c, refusal('MethodNotAllowed', `${c.req.path} takes ${allow}`));
  });
  app.onError((err, c) => {
    logger.error('request failed', { err, path: c.req.path });
    return answerRefusal(c, refusal('Internal', 'internal error'));
  });
  return app;
}
