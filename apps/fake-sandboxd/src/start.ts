// One fake node served over HTTP, for tests and benchmarks that host many
// nodes in one process.
import { formatHostPort, serveApp, type HttpServer, type Logger } from '@warmpool/runtime';
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

export interface RunningFakeSandboxd {
  readonly core: FakeSandboxd;
  readonly server: HttpServer;
  /** Base URL, e.g. http://127.0.0.1:41234. */
  readonly url: string;
  close(): Promise<void>;
}

export async function startFakeSandboxd(options: StartFakeSandboxdOptions = {}): Promise<RunningFakeSandboxd> {
  const { apiToken, host = '127.0.0.1', port = 0, logger, ...coreOptions } = options;
  const core = new FakeSandboxd(coreOptions);
  const app = createSandboxdApp(core, { apiToken, logger });
  let server: HttpServer;
  try {
    server = await serveApp(app, { host, port });
  } catch (err) {
    core.close();
    throw err;
  }
  // Unless told otherwise, claims name the address the node actually bound.
  if (coreOptions.advertise === undefined) core.advertise = formatHostPort(server.address);
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
