// A KubeConfig from a resolved kubeconfig context or from a pod's service
// account: TLS material, a bearer token, basic auth or an exec plugin,
// impersonation. What needs more (an auth provider, a proxy) goes to
// client-node instead (client-node.ts); loadKubeConfig chooses.
import type https from 'node:https';
import { bytesOf, type ClientCertificate, type Material } from './client-certificate.js';
import type { ExecPlugin, PluginCredential } from './exec-plugin.js';
import type { Headers } from './impersonation.js';
import type { KubeCluster, KubeConfig } from './kubeconfig.js';
import { RefreshedFile } from './refreshed-file.js';

/** A bearer token: from a file (read again as it rotates), else given inline. */
export type Token = { readonly value: string } | { readonly file: RefreshedFile };

/** A token file: read again as it rotates; while it is empty the last token it held is used. */
export function tokenFile(path: string): Token {
  return {
    file: new RefreshedFile(path, {
      refuse: (content) => (content.toString('utf8').trim() === '' ? 'empty' : undefined),
    }),
  };
}

export interface Credentials {
  readonly server: string;
  readonly ca?: Material | undefined;
  /** Trust any certificate the apiserver shows (kubeconfig's insecure-skip-tls-verify; never with a CA). */
  readonly skipTlsVerify?: boolean | undefined;
  /** The name to verify the apiserver's certificate against, when not the server URL's host. */
  readonly tlsServerName?: string | undefined;
  readonly clientCertificate?: ClientCertificate | undefined;
  readonly token?: Token | undefined;
  readonly basic?: { readonly username: string; readonly password: string } | undefined;
  /** Its token or client certificate replace the ones above. */
  readonly plugin?: ExecPlugin | undefined;
  /** Impersonate-* headers. */
  readonly impersonation?: Headers | undefined;
}

export class CredentialsKubeConfig implements KubeConfig {
  readonly #cluster: KubeCluster;
  readonly #credentials: Credentials;
  readonly #identity: RequestIdentity;

  constructor(credentials: Credentials) {
    this.#credentials = credentials;
    // The transport trims a trailing slash off the server itself.
    this.#cluster = { server: credentials.server };
    this.#identity = new RequestIdentity(credentials);
  }

  getCurrentCluster(): KubeCluster {
    return this.#cluster;
  }

  onUnauthorized(options: https.RequestOptions): void {
    this.#identity.onUnauthorized(options);
  }

  async applyToHTTPSOptions(options: https.RequestOptions): Promise<void> {
    const c = this.#credentials;
    if (c.skipTlsVerify) options.rejectUnauthorized = false;
    if (c.tlsServerName !== undefined) options.servername = c.tlsServerName;
    if (c.ca) options.ca = bytesOf(c.ca);
    if (c.clientCertificate) Object.assign(options, c.clientCertificate.current());
    if (c.basic) options.auth = `${c.basic.username}:${c.basic.password}`;
    await this.#identity.apply(options);
  }
}

/**
 * Who a request says it is in its headers: the bearer token (an exec plugin's replacing the kubeconfig's, with the
 * plugin's client certificate if it gives one) and the impersonation. Shared by our KubeConfig and client-node's
 * delegate, which leaves these to us.
 */
export class RequestIdentity {
  readonly #token: Token | undefined;
  readonly #plugin: ExecPlugin | undefined;
  readonly #impersonation: Headers | undefined;
  /** Which plugin credential each request's options carried, for onUnauthorized. */
  readonly #used = new WeakMap<https.RequestOptions, PluginCredential>();

  constructor(own: Pick<Credentials, 'token' | 'plugin' | 'impersonation'>) {
    this.#token = own.token;
    this.#plugin = own.plugin;
    this.#impersonation = own.impersonation;
  }

  /** Sets the headers on `options` (replacing any set before), and the plugin's client certificate. */
  async apply(options: https.RequestOptions): Promise<void> {
    let token = this.#token;
    if (this.#plugin) {
      const credential = await this.#plugin.credential();
      this.#used.set(options, credential);
      if (credential.cert && credential.key) Object.assign(options, { cert: credential.cert, key: credential.key });
      if (credential.token !== undefined) token = { value: credential.token };
    }
    const headers: Headers = { ...(options.headers as Headers | undefined), ...this.#impersonation };
    if (token) headers['Authorization'] = `Bearer ${tokenOf(token)}`;
    options.headers = headers;
  }

  /** The request sent with `options` got a 401: the plugin's credential it carried is dropped, if still current. */
  onUnauthorized(options: https.RequestOptions): void {
    this.#plugin?.invalidate(this.#used.get(options));
  }
}

function tokenOf(token: Token): string {
  return 'value' in token ? token.value : token.file.read().toString('utf8').trim();
}
