// One fake node served over HTTP, on a TCP address or a unix socket (as the
// real sandboxd is), for tests and benchmarks that host many nodes in one
// process.
import {
  DEFAULT_TOKEN_GRACE_MS,
  formatHostPort,
  messageOf,
  readTokenFile,
  serveApp,
  serveAppOnSocket,
  silentLogger,
  watchTokenFile,
  type HttpServer,
  type Logger,
  type SocketServer,
  type TokenFileWatch,
} from '@warmpool/runtime';
import { FakeSandboxd } from './core/fake-sandboxd.js';
import type { FakeSandboxdOptions } from './core/options.js';
import { createSandboxdApp } from './http/app.js';
import { RootAuth } from './http/auth.js';
import { SandboxRuntimes, type RuntimeSettings } from './core/runtime/runtimes.js';

/** The node's root token: fixed, or read from a file and re-read when it changes (a rotated Secret). */
export interface FakeSandboxdAuthOptions {
  apiToken?: string;
  /**
   * Wins over apiToken. Must hold a token; a later empty read keeps the last one (an emptied Secret must not open the
   * node).
   */
  apiTokenFile?: string;
  /** How often apiTokenFile is checked for a change (default 10 s). */
  tokenReloadIntervalMs?: number;
  /** After apiTokenFile changed, the replaced token is still root this long (default 5 min). */
  tokenGraceMs?: number;
  /** Tenant name → token: tenants claim and list their own claims; operator surfaces answer them 403. */
  tenants?: Readonly<Record<string, string>>;
}

/** The simulated sandbox runtimes (docs/sandbox-runtime.md): on by default. */
export interface FakeSandboxdRuntimeOptions {
  /** false: no runtime routes (the daemon's claim contract only). */
  runtime?: Partial<RuntimeSettings> | false;
}

export interface StartFakeSandboxdOptions
  extends FakeSandboxdOptions, FakeSandboxdAuthOptions, FakeSandboxdRuntimeOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: any free port. */
  port?: number;
  logger?: Logger;
}

export interface StartFakeSandboxdOnSocketOptions
  extends FakeSandboxdOptions, FakeSandboxdAuthOptions, FakeSandboxdRuntimeOptions {
  /** Serve here instead of on a TCP address. */
  socketPath: string;
  logger?: Logger;
}

export interface RunningFakeSandboxd<Server extends HttpServer | SocketServer = HttpServer> {
  readonly core: FakeSandboxd;
  /** The simulated sandbox runtimes; undefined with `runtime: false`. */
  readonly runtimes: SandboxRuntimes | undefined;
  readonly server: Server;
  /** Base URL, e.g. http://127.0.0.1:41234, or unix:/run/sandboxd.sock on a socket. */
  readonly url: string;
  close(): Promise<void>;
}

export function startFakeSandboxd(
  options: StartFakeSandboxdOnSocketOptions,
): Promise<RunningFakeSandboxd<SocketServer>>;
export function startFakeSandboxd(options?: StartFakeSandboxdOptions): Promise<RunningFakeSandboxd>;
export async function startFakeSandboxd(
  options: StartFakeSandboxdOptions & { socketPath?: string } = {},
): Promise<RunningFakeSandboxd<HttpServer | SocketServer>> {
  const {
    apiToken,
    apiTokenFile,
    tokenReloadIntervalMs,
    tokenGraceMs,
    tenants,
    logger,
    socketPath,
    runtime,
    host = '127.0.0.1',
    port = 0,
    ...coreOptions
  } = options;
  let auth: RootAuth;
  let tokenWatch: TokenFileWatch | undefined;
  if (apiTokenFile !== undefined) {
    let first: string | undefined;
    try {
      first = readTokenFile(apiTokenFile);
    } catch (err) {
      throw new RangeError(`--api-token-file: cannot read ${apiTokenFile} (${messageOf(err)})`, { cause: err });
    }
    if (first === undefined) throw new RangeError(`--api-token-file: ${apiTokenFile} is empty`);
    auth = new RootAuth(first, { graceMs: tokenGraceMs ?? DEFAULT_TOKEN_GRACE_MS, ...(tenants ? { tenants } : {}) });
    tokenWatch = watchFile(apiTokenFile, tokenReloadIntervalMs ?? 10_000, auth, logger ?? silentLogger);
  } else {
    auth = new RootAuth(apiToken, tenants ? { tenants } : {});
  }
  const core = new FakeSandboxd(coreOptions);
  const runtimes = runtime === false ? undefined : new SandboxRuntimes(core, runtime);
  const app = createSandboxdApp(core, { auth, ...(logger ? { logger } : {}), ...(runtimes ? { runtimes } : {}) });
  let server: HttpServer | SocketServer;
  try {
    server =
      socketPath !== undefined ? await serveAppOnSocket(app, { socketPath }) : await serveApp(app, { host, port });
  } catch (err) {
    tokenWatch?.close();
    runtimes?.close();
    core.close();
    throw err;
  }
  // Unless told otherwise (an address, or false for none), claims name the address the node actually bound (a socket
  // has none: the default stands).
  if (coreOptions.advertise === undefined && 'address' in server) core.advertise = formatHostPort(server.address);
  return {
    core,
    runtimes,
    server,
    url: server.url,
    async close() {
      tokenWatch?.close();
      await server.close();
      runtimes?.close();
      core.close();
    },
  };
}

function watchFile(file: string, intervalMs: number, auth: RootAuth, logger: Logger): TokenFileWatch {
  return watchTokenFile(file, intervalMs, {
    onChange: (token) => {
      if (token === undefined) {
        logger.warn('the API token file is empty now; keeping the last token', { tokenFile: file });
        return;
      }
      auth.rotate(token);
      logger.info('API token reloaded; the replaced one is still root during the grace', { tokenFile: file });
    },
    onError: (err) =>
      logger.warn('cannot re-read the API token file; keeping the last token', { tokenFile: file, err }),
  });
}
