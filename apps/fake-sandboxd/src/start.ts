// One fake node served over HTTP, on a TCP address or a unix socket (as the
// real sandboxd is), for tests and benchmarks that host many nodes in one
// process.
import { formatHostPort, serveApp, serveAppOnSocket, type HttpServer, type Logger, type SocketServer } from '@warmpool/runtime';
import { FakeSandboxd } from './core/fake-sandboxd.js';
import type { FakeSandboxdOptions } from './core/options.js';
import { createSandboxdApp } from './http/app.js';

export interface StartFakeSandboxdOptions extends FakeSandboxdOptions {
  apiToken?: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: any free port. */
  port?: number;
  logger?: Logger;
}

export interface StartFakeSandboxdOnSocketOptions extends FakeSandboxdOptions {
  apiToken?: string;
  /** Serve here instead of on a TCP address. */
  socketPath: string;
  logger?: Logger;
}

export interface RunningFakeSandboxd<Server extends HttpServer | SocketServer = HttpServer> {
  readonly core: FakeSandboxd;
  readonly server: Server;
  /** Base URL, e.g. http://127.0.0.1:41234, or unix:/run/sandboxd.sock on a socket. */
  readonly url: string;
  close(): Promise<void>;
}

export function startFakeSandboxd(options: StartFakeSandboxdOnSocketOptions): Promise<RunningFakeSandboxd<SocketServer>>;
export function startFakeSandboxd(options?: StartFakeSandboxdOptions): Promise<RunningFakeSandboxd>;
export async function startFakeSandboxd(options: StartFakeSandboxdOptions & { socketPath?: string } = {}): Promise<RunningFakeSandboxd<HttpServer | SocketServer>> {
  const { apiToken, logger, socketPath, host = '127.0.0.1', port = 0, ...coreOptions } = options;
  const core = new FakeSandboxd(coreOptions);
  const app = createSandboxdApp(core, { apiToken, logger });
  let server: HttpServer | SocketServer;
  try {
    server = socketPath !== undefined ? await serveAppOnSocket(app, { socketPath }) : await serveApp(app, { host, port });
  } catch (err) {
    core.close();
    throw err;
  }
  // Unless told otherwise, claims name the address the node actually bound (a socket has none: the default stands).
  if (coreOptions.advertise === undefined && 'address' in server) core.advertise = formatHostPort(server.address);
  return {
    core,
    server,
    url: server.url,
    async close() {
      await server.close();
      core.close();
    },
  };
}
