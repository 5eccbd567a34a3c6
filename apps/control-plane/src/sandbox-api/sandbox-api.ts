// The Sandbox API composed, a runnable in every replica: what it serves from
// (sources.ts), the front proxy's settings (re-read; a rotated CA reaches new
// connections), SubjectAccessReviews as the proxied user, and the TLS server.
import { AGENTS_GROUP, SandboxType } from '@warmpool/api';
import { KubeAccessReviewer, type KubeTransport } from '@warmpool/kube';
import { closeInOrder, type HostPort, type Logger } from '@warmpool/runtime';
import type { Registry } from 'prom-client';
import { RequestHeaderSource } from '../http/access/front-proxy.js';
import type { Runnable } from '../manager/runnable.js';
import type { SandboxAuthorizer } from './access.js';
import { SandboxApiMetrics } from './metrics.js';
import { SandboxApiServer } from './server.js';
import { servingCert } from './serving-cert.js';
import { SandboxSources, type SandboxSourcesOptions } from './sources.js';
import type { SandboxView } from './view.js';

export interface SandboxApiOptions extends SandboxSourcesOptions {
  listen: HostPort;
  /** PEM files; absent: a self-signed certificate made at start. */
  tls?: { certFile: string; keyFile: string };
  /** Extra DNS names for a self-signed certificate (e.g. the Service's). */
  selfSignedNames?: readonly string[];
  transport: KubeTransport;
  /** Default: SubjectAccessReviews on sandboxes.agents.x-k8s.io, cached 10 s. */
  authorizer?: SandboxAuthorizer;
  registry: Registry;
  logger: Logger;
}

/** A runnable in every replica; its own readiness is its /readyz, not the replica's. */
export interface SandboxApi extends Runnable {
  readonly view: SandboxView;
  readonly url: string | undefined;
  /** Whether it serves a self-signed certificate (the APIService must then skip verification). */
  readonly selfSigned: boolean;
  notReadyReasons(): string[];
  start(): Promise<void>;
  close(): Promise<void>;
}

export function createSandboxApi(options: SandboxApiOptions): SandboxApi {
  return new SandboxApiRunnable(options);
}

class SandboxApiRunnable implements SandboxApi {
  readonly name = 'Sandbox API';
  readonly needsLeader = false;
  readonly selfSigned: boolean;
  readonly #sources: SandboxSources;
  readonly #requestHeaders: RequestHeaderSource;
  readonly #server: SandboxApiServer;
  readonly #logger: Logger;

  constructor(options: SandboxApiOptions) {
    const { logger } = options;
    this.#logger = logger;
    const sources = new SandboxSources(options);
    this.#sources = sources;
    const cert = servingCert({
      ...(options.tls !== undefined ? { certFile: options.tls.certFile, keyFile: options.tls.keyFile } : {}),
      ...(options.selfSignedNames !== undefined ? { extraNames: options.selfSignedNames } : {}),
    });
    this.selfSigned = cert.selfSigned;
    this.#requestHeaders = new RequestHeaderSource({
      transport: options.transport,
      logger: logger.child({ component: 'front-proxy' }),
      onChange: () => this.#server.refreshTls(),
    });
    const sandboxClaims = options.claims?.sandboxClaims;
    this.#server = new SandboxApiServer({
      listen: options.listen,
      cert,
      view: sources.view,
      reader: sources.reader,
      notReadyReasons: () => sources.notReadyReasons(),
      requestHeaders: () => this.#requestHeaders.current,
      authorizer: options.authorizer ?? sandboxReviewer(options.transport),
      claims: options.claims?.pipeline,
      sandboxClaims:
        sandboxClaims === undefined
          ? undefined
          : {
              hasSynced: () => sandboxClaims.hasSynced(),
              get: (namespace: string, name: string) => sandboxClaims.lister.get(namespace, name),
            },
      metrics: new SandboxApiMetrics(options.registry, () => sources.view.size),
      logger: logger.child({ component: 'server' }),
    });
  }

  get view(): SandboxView {
    return this.#sources.view;
  }

  get url(): string | undefined {
    return this.#server.url;
  }

  notReadyReasons(): string[] {
    return this.#sources.notReadyReasons();
  }

  async start(): Promise<void> {
    await this.#requestHeaders.start();
    this.#sources.start();
    await this.#server.start();
    this.#logger.info('Sandbox API serving', {
      url: this.#server.url,
      selfSignedCertificate: this.selfSigned,
      frontProxyReady: this.#requestHeaders.current !== undefined,
    });
  }

  async close(): Promise<void> {
    await closeInOrder(
      'the Sandbox API',
      [
        ['server', () => this.#server.close()],
        ['front proxy settings', () => this.#requestHeaders.close()],
        ['sources', () => this.#sources.close()],
      ],
      this.#logger,
    );
  }
}

/** SubjectAccessReviews on sandboxes.agents.x-k8s.io as the proxied user, decisions cached 10 s. */
function sandboxReviewer(transport: KubeTransport): SandboxAuthorizer {
  const reviewer = new KubeAccessReviewer({
    transport,
    resource: { group: AGENTS_GROUP, resource: SandboxType.plural },
  });
  return { authorize: (user, namespace, verb, name) => reviewer.authorize(user, namespace, verb, name) };
}
