// The one thing every client of the apiserver holds: where the apiserver is and
// how to authenticate to it. An interface, not client-node's class: loading
// client-node costs a process ≈ 86 MiB of RSS and 32 MiB of heap (its generated
// API), and the apps need none of it to talk to the apiserver.
import type https from 'node:https';

/** The cluster a KubeConfig talks to. */
export interface KubeCluster {
  /** The apiserver's URL, e.g. `https://10.96.0.1:443`. */
  readonly server: string;
  /** A proxy to reach it through; the agent for it then comes from applyToHTTPSOptions. */
  readonly proxyUrl?: string | undefined;
}

/**
 * Where the apiserver is and how to authenticate each request to it. loadKubeConfig gives one; client-node's
 * KubeConfig has the same shape, so a test or a tool that holds one of those may hand it in.
 */
export interface KubeConfig {
  getCurrentCluster(): KubeCluster | null;
  /**
   * Sets the TLS material, the authentication headers and, behind a proxy, the agent on `options`. Called for every
   * request: tokens and certificates rotate.
   */
  applyToHTTPSOptions(options: https.RequestOptions): Promise<void>;
  /**
   * The apiserver answered 401 to the request sent with `options` (as applyToHTTPSOptions set them): the plugin's
   * credential they carried is dropped, unless a newer one has replaced it already.
   */
  onUnauthorized?(options: https.RequestOptions): void;
}

/** A kubeconfig that cannot be used, or none found; the message says which file and what. */
export class KubeConfigError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'KubeConfigError';
  }
}
