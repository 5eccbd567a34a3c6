// Serving a Hono app on Node with a close() that drains: stop accepting, let
// in-flight requests finish, then drop idle keep-alive sockets.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import type { Hono } from 'hono';
import type { HostPort } from './address.js';

export interface HttpServer {
  /** The bound address (the real port when 0 was asked for). */
  readonly address: HostPort;
  readonly url: string;
  close(): Promise<void>;
}

export interface ServeOptions extends HostPort {
  /** Keep-alive idle timeout; above typical client pools' idle timeouts to avoid races. */
  keepAliveTimeoutMs?: number;
  /** After this, in-flight requests are cut at close(). */
  closeTimeoutMs?: number;
}

// Hono's generic parameters vary per app; serving does not care about them.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyHono = Hono<any, any, any>;

export function serveApp(app: AnyHono, options: ServeOptions): Promise<HttpServer> {
  let closing = false;
  // server.close() waits for every keep-alive socket, and a socket busy at close
  // would otherwise stay open after its answer: answers given while closing
  // take their connection with them.
  const fetch = async (request: Request, env: unknown): Promise<Response> => {
    const response = await app.fetch(request, env);
    if (closing) response.headers.set('connection', 'close');
    return response;
  };
  return new Promise((resolve, reject) => {
    const server = serve({ fetch, hostname: options.host, port: options.port }, (info: AddressInfo) => {
      const address = { host: info.address, port: info.port };
      const host = info.address.includes(':') ? `[${info.address}]` : info.address;
      resolve({
        address,
        url: `http://${host}:${info.port}`,
        close: () => {
          closing = true;
          return closeServer(server as Server, options.closeTimeoutMs ?? 10_000);
        },
      });
    }) as Server;
    server.keepAliveTimeout = options.keepAliveTimeoutMs ?? 65_000;
    server.once('error', reject);
  });
}

function closeServer(server: Server, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
    timer.unref();
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    // close() waits for keep-alive sockets; idle ones can go now, busy ones finish their request.
    server.closeIdleConnections();
  });
}
