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

  constructor(credentials: Credentials) {
    this.#credentials = credentials;
    this.#cluster = { server: credentials.server.replace(/\/+$/, '') };
  }

  getCurrentCluster(): KubeCluster {
    return this.#cluster;
  }

  /** Which plugin credential each request's options carried, for onUnauthorized. */
  readonly #used = new WeakMap<https.RequestOptions, PluginCredential>();

  onUnauthorized(options: https.RequestOptions): void {
    this.#credentials.plugin?.invalidate(this.#used.get(options));
  }

  async applyToHTTPSOptions(options: https.RequestOptions): Promise<void> {
    const c = this.#credentials;
    if (c.skipTlsVerify) options.rejectUnauthorized = false;
    if (c.tlsServerName !== undefined) options.servername = c.tlsServerName;
    if (c.ca) options.ca = bytesOf(c.ca);
    if (c.clientCertificate) Object.assign(options, c.clientCertificate.current());
    if (c.basic) options.auth = `${c.basic.username}:${c.basic.password}`;
    let token = c.token;
    if (c.plugin) {
      const credential = await c.plugin.credential();
      this.#used.set(options, credential);
      if (credential.cert && credential.key) Object.assign(options, { cert: credential.cert, key: credential.key });
      if (credential.token !== undefined) token = { value: credential.token };
    }
    options.headers = withCredentialHeaders(options.headers, token, c.impersonation);
  }
}

/** `headers` with the bearer token and the impersonation added (they replace any set before). */
export function withCredentialHeaders(
  headers: https.RequestOptions['headers'],
  token: Token | undefined,
  impersonation: Headers | undefined,
): Headers {
  const out: Headers = { ...(headers as Headers | undefined), ...impersonation };
  if (token) out['Authorization'] = `Bearer ${tokenOf(token)}`;
  return out;
}

function tokenOf(token: Token): string {
  return 'value' in token ? token.value : token.file.read().toString('utf8').trim();
}
