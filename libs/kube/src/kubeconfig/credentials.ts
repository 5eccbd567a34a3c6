// A KubeConfig from a resolved kubeconfig context or from a pod's service
// account: TLS material, a bearer token or basic auth, impersonation. What
// needs more (exec plugins, auth providers, a proxy) goes to client-node
// instead (client-node.ts); loadKubeConfig chooses.
import type https from 'node:https';
import type { KubeCluster, KubeConfig } from './kubeconfig.js';
import type { RefreshedFile } from './refreshed-file.js';

/** Bytes given inline, or a file read again as it rotates. */
export type Material = { readonly data: Buffer } | { readonly file: RefreshedFile };

export interface Credentials {
  readonly server: string;
  readonly ca?: Material | undefined;
  /** Trust any certificate the apiserver shows (kubeconfig's insecure-skip-tls-verify). */
  readonly skipTlsVerify?: boolean | undefined;
  /** The name to verify the apiserver's certificate against, when not the server URL's host. */
  readonly tlsServerName?: string | undefined;
  readonly clientCertificate?: Material | undefined;
  readonly clientKey?: Material | undefined;
  /** A bearer token; from a file, its content with surrounding whitespace trimmed. */
  readonly token?: { readonly value: string } | { readonly file: RefreshedFile } | undefined;
  readonly basic?: { readonly username: string; readonly password: string } | undefined;
  /** Sent as Impersonate-User. */
  readonly impersonate?: string | undefined;
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

  applyToHTTPSOptions(options: https.RequestOptions): Promise<void> {
    const c = this.#credentials;
    if (c.skipTlsVerify) options.rejectUnauthorized = false;
    if (c.tlsServerName !== undefined) options.servername = c.tlsServerName;
    if (c.ca) options.ca = bytesOf(c.ca);
    if (c.clientCertificate) options.cert = bytesOf(c.clientCertificate);
    if (c.clientKey) options.key = bytesOf(c.clientKey);
    const headers: Record<string, string> = { ...(options.headers as Record<string, string> | undefined) };
    if (c.token) headers['Authorization'] = `Bearer ${tokenOf(c.token)}`;
    else if (c.basic) options.auth = `${c.basic.username}:${c.basic.password}`;
    if (c.impersonate !== undefined) headers['Impersonate-User'] = c.impersonate;
    options.headers = headers;
    return Promise.resolve();
  }
}

function bytesOf(material: Material): Buffer {
  return 'data' in material ? material.data : material.file.read();
}

function tokenOf(token: NonNullable<Credentials['token']>): string {
  return 'value' in token ? token.value : token.file.read().toString('utf8').trim();
}
