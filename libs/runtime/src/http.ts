// Serving a Hono app on Node with a close() that drains: stop accepting, let
// in-flight requests finish, then drop idle keep-alive sockets. On a TCP
// address or on a unix socket (how node-local daemons are reached).
import { lstatSync, unlinkSync } from 'node:fs';
import { connect, type AddressInfo } from 'node:net';
import { createServer as createHttpsServer, Server as HttpsServer } from 'node:https';
import type { SecureContextOptions } from 'node:tls';
import {
  createServer as createHttpServer,
  ServerResponse,
  type IncomingMessage,
  type OutgoingHttpHeader,
  type OutgoingHttpHeaders,
  type Server,
} from 'node:http';
import { getRequestListener } from '@hono/node-server';
import type { Hono } from 'hono';
import type { HostPort } from './address.js';
import { bodyLeftUnread } from './incoming-body.js';
import { lingerAtClose } from './lingering-close.js';

export interface HttpServer {
  /** The bound address (the real port when 0 was asked for). */
  readonly address: HostPort;
  readonly url: string;
  /** Served over TLS: the certificate settings every new connection gets from now on (throws when served plainly). */
  updateTls(tls: TlsServing): void;
  close(): Promise<void>;
}

export interface TlsServing {
  cert: string | Buffer;
  key: string | Buffer;
  /**
   * Ask every client for a certificate, verified against this CA bundle (none yet: every one is unverified). TLS
   * refuses no client for it: the app reads `socket.authorized` and decides.
   */
  clientCertificates?: { ca: string | undefined };
}

export interface SocketServer {
  readonly socketPath: string;
  /** `unix:/path/to/socket`, the form clients such as the node agent take. */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * A handler that answers some requests on Node's own objects, ahead of the app: true when it took the request (it
 * then answers it, and must not throw), false to leave it to the app. For a hot path that gains from skipping the
 * app's routing and its Web Request/Response (the node agent's claim).
 */
export type AheadOfApp = (incoming: IncomingMessage, outgoing: ServerResponse) => boolean;

export interface ServeTuning {
  /** Keep-alive idle timeout; above typical client pools' idle timeouts to avoid races. */
  keepAliveTimeoutMs?: number;
  /** After this, in-flight requests are cut at close(). */
  closeTimeoutMs?: number;
  /** Tried on every request before the app. */
  ahead?: AheadOfApp;
}

export interface ServeOptions extends HostPort, ServeTuning {
  /** Serve HTTPS with this certificate and key (PEM); plain HTTP when absent. */
  tls?: TlsServing;
}

export interface SocketServeOptions extends ServeTuning {
  socketPath: string;
}

// Hono's generic parameters vary per app; serving does not care about them.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyHono = Hono<any, any, any>;

type HeadFields = OutgoingHttpHeaders | OutgoingHttpHeader[];

interface Adapted {
  server: Server;
  close(timeoutMs: number): Promise<void>;
}

/**
 * The app behind a Node server. An answer takes its connection with it
 * (`Connection: close`) when its head is written while the server closes —
 * server.close() waits for every keep-alive socket, and a socket busy at close
 * would otherwise stay open after its answer — or while the request's body
 * is still unread (refused before reading, or cut at the size cap): keeping
 * that connection alive would mean reading the rest of the body first, which
 * is what a refusal must not do, and a client stalled mid-body would hold
 * close() for its whole timeout; such a connection is then closed gently
 * (lingering-close.ts), so that a client still sending the body reads the
 * answer rather than a reset. That is decided in the response class, when
 * the head is written, rather than by wrapping every request's fetch in one
 * more promise (and it holds for handlers that write on Node's response
 * directly).
 */
function adapt(app: AnyHono, tuning: ServeTuning, tls?: ServeOptions['tls']): Adapted {
  let closing = false;
  class DrainingResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
    override writeHead(statusCode: number, statusMessage?: string | HeadFields, headers?: HeadFields): this {
      if (bodyLeftUnread(this.req)) {
        this.shouldKeepAlive = false;
        // The client may still be sending it: a close at once would reset the connection under the answer.
        if (this.socket !== null) lingerAtClose(this.socket);
      } else if (closing) this.shouldKeepAlive = false;
      // Node takes the headers in either place, as the overloads say.
      return typeof statusMessage === 'string'
        ? super.writeHead(statusCode, statusMessage, headers)
        : super.writeHead(statusCode, statusMessage);
    }
  }
  const appListener = getRequestListener(app.fetch);
  const { ahead } = tuning;
  const listener =
    ahead === undefined
      ? appListener
      : (incoming: IncomingMessage, outgoing: ServerResponse): void => {
          if (!ahead(incoming, outgoing)) void appListener(incoming, outgoing);
        };
  // What @hono/node-server's createAdaptorServer builds, with the listener above.
  const server: Server =
    tls === undefined
      ? createHttpServer({ ServerResponse: DrainingResponse }, listener)
      : createHttpsServer({ ServerResponse: DrainingResponse, ...tlsOptionsOf(tls) }, listener);
  server.keepAliveTimeout = tuning.keepAliveTimeoutMs ?? 65_000;
  return {
    server,
    close: (timeoutMs) => {
      closing = true;
      return closeServer(server, timeoutMs);
    },
  };
}

function tlsOptionsOf(tls: TlsServing): SecureContextOptions & { requestCert?: boolean; rejectUnauthorized?: boolean } {
  const clients = tls.clientCertificates;
  if (clients === undefined) return { cert: tls.cert, key: tls.key };
  return {
    cert: tls.cert,
    key: tls.key,
    ...(clients.ca !== undefined ? { ca: clients.ca } : {}),
    requestCert: true,
    rejectUnauthorized: false,
  };
}

export function serveApp(app: AnyHono, options: ServeOptions): Promise<HttpServer> {
  const { server, close } = adapt(app, options, options.tls);
  const scheme = options.tls === undefined ? 'http' : 'https';
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      const info = server.address() as AddressInfo;
      const host = info.address.includes(':') ? `[${info.address}]` : info.address;
      resolve({
        address: { host: info.address, port: info.port },
        url: `${scheme}://${host}:${info.port}`,
        updateTls: (tls) => {
          if (!(server instanceof HttpsServer)) throw new Error('this server is served without TLS');
          server.setSecureContext(tlsOptionsOf(tls));
        },
        close: () => close(options.closeTimeoutMs ?? 10_000),
      });
    });
  });
}

/**
 * Serves on a unix socket. A socket file left behind by a process that died
 * (nobody answers on it) is replaced; a live one, or any other file at that
 * path, is an error. Node removes the socket file when the server closes.
 */
export async function serveAppOnSocket(app: AnyHono, options: SocketServeOptions): Promise<SocketServer> {
  const { socketPath } = options;
  await removeStaleSocket(socketPath);
  const { server, close } = adapt(app, options);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve({ socketPath, url: `unix:${socketPath}`, close: () => close(options.closeTimeoutMs ?? 10_000) });
    });
  });
}

async function removeStaleSocket(path: string): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch {
    return;
  }
  if (!isSocket) throw new Error(`cannot serve on ${path}: a file that is not a socket is in the way`);
  const live = await new Promise<boolean>((resolve) => {
    const probe = connect(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
  if (live) throw new Error(`cannot serve on ${path}: another server is listening there`);
  unlinkSync(path);
}

/** How often close() drops the keep-alive sockets that went idle since it began. */
const IDLE_SWEEP_MS = 100;

function closeServer(server: Server, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
    // An answer whose head went out before close() (a streamed one) keeps its connection alive: once it ends, that
    // socket is idle, and close() would wait for it until the timeout cut every connection still open.
    const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
    timer.unref();
    sweep.unref();
    server.close(() => {
      clearTimeout(timer);
      clearInterval(sweep);
      resolve();
    });
    // close() waits for keep-alive sockets; idle ones can go now, busy ones finish their request.
    server.closeIdleConnections();
  });
}
