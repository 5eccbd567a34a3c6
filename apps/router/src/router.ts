// The router composed: the caller gate, the resolver and the forwarder behind
// the app, served; close() turns /readyz to 503 and stops taking requests,
// lets calls in flight finish within the shutdown timeout, then closes the
// node connections.
import { SandboxType } from '@warmpool/api';
import { KubeAccessReviewer, type KubeTransport } from '@warmpool/kube';
import { serveApp, type HostPort, type HttpServer, type Logger } from '@warmpool/runtime';
import type { Registry } from 'prom-client';
import { createRouterApp } from './app.js';
import { CallerGate, type SandboxAccessReviewer } from './caller.js';
import { Forwarder } from './forwarder.js';
import { RouterMetrics } from './metrics.js';
import { SandboxResolver } from './resolver.js';

export interface RouterOptions {
  /** The router's own access to the Kubernetes API (Secrets, Sandboxes, SandboxClaims, reviews). */
  transport: KubeTransport;
  listen: HostPort;
  registry: Registry;
  logger: Logger;
  runtimePort: number;
  tokenlessUser?: string;
  proxyTimeoutMs: number;
  routeCacheTtlMs: number;
  reviewCacheTtlMs: number;
  shutdownTimeoutMs: number;
  /** Instead of reviews through `transport` (tests). */
  reviewer?: SandboxAccessReviewer;
}

export interface RunningRouter {
  readonly server: HttpServer;
  readonly url: string;
  close(): Promise<void>;
}

export async function startRouter(options: RouterOptions): Promise<RunningRouter> {
  const reviewer =
    options.reviewer ??
    new KubeAccessReviewer({
      transport: options.transport,
      resource: { group: SandboxType.group, resource: SandboxType.plural },
      ttlMs: options.reviewCacheTtlMs,
    });
  const gate = new CallerGate({
    reviewer,
    ...(options.tokenlessUser !== undefined ? { tokenlessUser: options.tokenlessUser } : {}),
  });
  const resolver = new SandboxResolver({ transport: options.transport, cacheTtlMs: options.routeCacheTtlMs });
  const forwarder = new Forwarder();
  let closing = false;
  const app = createRouterApp({
    gate,
    resolver,
    forwarder,
    metrics: new RouterMetrics(options.registry),
    registry: options.registry,
    runtimePort: options.runtimePort,
    proxyTimeoutMs: options.proxyTimeoutMs,
    logger: options.logger,
    ready: () => !closing,
  });
  let server: HttpServer;
  try {
    server = await serveApp(app, { ...options.listen, closeTimeoutMs: options.shutdownTimeoutMs });
  } catch (err) {
    await forwarder.close();
    throw err;
  }
  let closed: Promise<void> | undefined;
  return {
    server,
    url: server.url,
    close: () =>
      (closed ??= (async () => {
        closing = true;
        try {
          await server.close();
        } finally {
          await forwarder.close();
        }
      })()),
  };
}
