// The Sandbox API served over TLS, behind the APIService
// v1beta1.agents.x-k8s.io: every connection is asked for a client
// certificate, verified against the front proxy's CA as it is at the time
// (refreshTls when it rotates); whether a request may pass is the app's to
// decide (./access.ts). Closing ends every open watch first.
import { serveApp, type HostPort, type HttpServer, type TlsServing } from '@warmpool/runtime';
import { createSandboxApiApp, type SandboxApiAppOptions } from './app.js';
import { OpenWatches } from './watch.js';

export interface SandboxApiServerOptions extends Omit<
  SandboxApiAppOptions,
  'watches' | 'now' | 'bookmarkIntervalMs' | 'defaultWatchTimeoutMs'
> {
  listen: HostPort;
  cert: { cert: string; key: string };
  now?: () => number;
  /** Bookmarks on watches that allow them, this often (default 15 s). */
  bookmarkIntervalMs?: number;
  /**
   * A watch without timeoutSeconds ends after between this and twice this (default 30 min), as the apiserver's do;
   * none lasts longer than twice this.
   */
  defaultWatchTimeoutMs?: number;
}

export class SandboxApiServer {
  readonly #options: SandboxApiServerOptions;
  readonly #watches = new OpenWatches();
  readonly #app: ReturnType<typeof createSandboxApiApp>;
  #server: HttpServer | undefined;
  #caPem: string | undefined;

  constructor(options: SandboxApiServerOptions) {
    this.#options = options;
    this.#app = createSandboxApiApp({
      ...options,
      watches: this.#watches,
      now: options.now ?? Date.now,
      bookmarkIntervalMs: options.bookmarkIntervalMs ?? 15_000,
      defaultWatchTimeoutMs: options.defaultWatchTimeoutMs ?? 30 * 60_000,
    });
  }

  get url(): string | undefined {
    return this.#server?.url;
  }

  get address(): HostPort | undefined {
    return this.#server?.address;
  }

  async start(): Promise<void> {
    this.#server = await serveApp(this.#app, { ...this.#options.listen, tls: this.#tls(), closeTimeoutMs: 5_000 });
  }

  /** The front proxy's CA changed: new connections verify against it. */
  refreshTls(): void {
    if (this.#server === undefined || this.#options.requestHeaders()?.clientCa === this.#caPem) return;
    this.#server.updateTls(this.#tls());
  }

  async close(): Promise<void> {
    this.#watches.endAll();
    await this.#server?.close();
  }

  #tls(): TlsServing {
    this.#caPem = this.#options.requestHeaders()?.clientCa;
    return { ...this.#options.cert, clientCertificates: { ca: this.#caPem } };
  }
}
