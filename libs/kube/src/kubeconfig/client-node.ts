// The kubeconfigs only client-node can serve: exec credential plugins (EKS,
// GKE, AKS, OIDC logins), the legacy auth providers, and a cluster behind a
// proxy (its agent). client-node is imported the first time such a
// KubeConfig authenticates a request, so a process that never meets one never
// pays for it.
import type https from 'node:https';
import type { ResolvedContext } from './file.js';
import type { KubeCluster, KubeConfig } from './kubeconfig.js';

export class ClientNodeKubeConfig implements KubeConfig {
  readonly #cluster: KubeCluster;
  readonly #context: ResolvedContext;
  #loaded: Promise<KubeConfig> | undefined;

  constructor(context: ResolvedContext) {
    this.#context = context;
    this.#cluster = { server: context.cluster.server.replace(/\/+$/, ''), proxyUrl: context.cluster['proxy-url'] };
  }

  getCurrentCluster(): KubeCluster {
    return this.#cluster;
  }

  async applyToHTTPSOptions(options: https.RequestOptions): Promise<void> {
    this.#loaded ??= this.#load();
    let loaded: KubeConfig;
    try {
      loaded = await this.#loaded;
    } catch (error) {
      this.#loaded = undefined; // the next request tries again
      throw error;
    }
    await loaded.applyToHTTPSOptions(options);
  }

  /** client-node given the one context we resolved (its own merge refuses names defined twice; kubectl's does not). */
  async #load(): Promise<KubeConfig> {
    const { KubeConfig: ClientNode } = await import('@kubernetes/client-node');
    const { contextName, cluster, user, namespace } = this.#context;
    const config = new ClientNode();
    // JSON is YAML; client-node spells the token file `token-file`.
    config.loadFromString(
      JSON.stringify({
        'current-context': contextName,
        clusters: [{ name: 'cluster', cluster }],
        users: [{ name: 'user', user: { ...user, 'token-file': user.tokenFile } }],
        contexts: [{ name: contextName, context: { cluster: 'cluster', user: 'user', namespace } }],
      }),
    );
    return config;
  }
}
