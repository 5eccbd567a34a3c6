// The sandboxd HTTP contract (docs/sandboxd.md) over a FakeSandboxd core,
// composed: the operator's verbs (operator-routes.ts), the claim and sandbox
// verbs (sandbox-routes.ts), the runtime contract (runtime-routes.ts), each a
// small Hono app whose every route declares who may call it (access.ts).
// Requests no route takes are answered as Go's mux answers them (./go-mux.ts).
import { silentLogger, type Logger } from '@warmpool/runtime';
import { Hono } from 'hono';
import type { FakeSandboxd } from '../core/fake-sandboxd.js';
import type { SandboxRuntimes } from '../core/runtime/runtimes.js';
import { fail, type Env } from './access.js';
import { RootAuth } from './auth.js';
import { goMuxFallback } from './go-mux.js';
import { metricsApp, operatorApp } from './operator-routes.js';
import { runtimeApp } from './runtime-routes.js';
import { claimsApp, sandboxVerbsApp } from './sandbox-routes.js';

export interface SandboxdAppOptions {
  /** The node's root token; absent or empty (and no tenants) = every caller is root (the real daemon's behaviour). */
  apiToken?: string;
  /** Tenant name → token, when no `auth` is given. */
  tenants?: Readonly<Record<string, string>>;
  /** The credentials themselves (win over apiToken and tenants), for a caller that rotates the root token. */
  auth?: RootAuth;
  logger?: Logger;
  /** Serve the sandbox runtime contract (docs/sandbox-runtime.md) over these simulated runtimes. */
  runtimes?: SandboxRuntimes;
}

export function createSandboxdApp(core: FakeSandboxd, options: SandboxdAppOptions = {}): Hono<Env> {
  const auth =
    options.auth ?? new RootAuth(options.apiToken, { ...(options.tenants ? { tenants: options.tenants } : {}) });
  const logger = options.logger ?? silentLogger;
  const app = new Hono<Env>()
    .on('GET', ['/healthz'], (c) => c.text('ok'))
    .route('/', operatorApp(core, auth, logger))
    .route('/', claimsApp(core, auth))
    .route('/', sandboxVerbsApp(core, auth));
  if (options.runtimes !== undefined) app.route('/', runtimeApp(core, options.runtimes));
  app.route('/', metricsApp(core, auth, options.runtimes));
  app.notFound(goMuxFallback(app));
  app.onError((err, c) => {
    logger.error('request failed', { err, path: c.req.path });
    return fail(c, 500, 'internal error');
  });
  return app;
}
