// The kubeconfigs only client-node can serve: exec credential plugins (EKS,
// GKE, AKS, OIDC logins), the legacy auth providers, and a cluster behind a
// proxy (its agent). client-node is imported the first time such a
// KubeConfig authenticates a request, so a process that never meets one never
// pays for it. The bearer token and impersonation stay ours (client-node
// reads a token file once and drops as-groups, as-uid and as-user-extra).
import type https from 'node:https';
import { withCredentialHeaders, type Token } from './credentials.js';
import type { ResolvedContext } from './file.js';
import type { Headers } from './impersonation.js';
import { KubeConfigError, type KubeCluster, type KubeConfig } from './kubeconfig.js';

const OURS = ['token', 'tokenFile', 'token-file', 'as', 'as-groups', 'as-uid', 'as-user-extra'];

export class ClientNodeKubeConfig implements KubeConfig {
  readonly #cluster: KubeCluster;
  readonly #context: ResolvedContext;
  readonly #token: Token | undefined;
  readonly #impersonation: Headers;
  #loaded: Promise<KubeConfig> | undefined;
  /** Requests authenticate one at a time: a plugin's credential is fetched once, then cached, not once per request. */
  #turn: Promise<unknown> = Promise.resolve();

  constructor(context: ResolvedContext, token: Token | undefined, impersonation: Headers) {
    this.#context = context;
    this.#token = token;
    this.#impersonation = impersonation;
    this.#cluster = { server: context.cluster.server.replace(/\/+$/, ''), proxyUrl: context.cluster['proxy-url'] };
  }

  getCurrentCluster(): KubeCluster {
    return this.#cluster;
  }

  applyToHTTPSOptions(options: https.RequestOptions): Promise<void> {
    const turn = this.#turn.then(() => this.#apply(options));
    this.#turn = turn.catch(() => undefined);
    return turn;
  }

  async #apply(options: https.RequestOptions): Promise<void> {
    this.#loaded ??= this.#load();
    try {
      await (await this.#loaded).applyToHTTPSOptions(options);
    } catch (error) {
      this.#loaded = undefined; // the next request loads and tries again
      const first = ((error as Error).message || 'no message').split('\n')[0]?.slice(0, 300);
      throw new KubeConfigError(`credentials of context ${this.#context.contextName} (${this.#kind()}): ${first}`, {
        cause: error,
      });
    }
    options.headers = withCredentialHeaders(options.headers, this.#token, this.#impersonation);
  }

  #kind(): string {
    const { user, cluster } = this.#context;
    if (user.exec !== undefined) {
      const command = (user.exec as { command?: unknown }).command;
      return `exec plugin ${typeof command === 'string' ? command : '(no command)'}`;
    }
    if (user['auth-provider'] !== undefined) return 'auth provider';
    return `proxy ${hostOf(cluster['proxy-url'])}`;
  }

  /** client-node given the one context we resolved (its own merge refuses names defined twice; kubectl's does not). */
  async #load(): Promise<KubeConfig> {
    const { KubeConfig: ClientNode } = await import('@kubernetes/client-node');
    const { contextName, cluster, user, namespace } = this.#context;
    const theirs = Object.fromEntries(Object.entries(user).filter(([key]) => !OURS.includes(key)));
    const config = new ClientNode();
    // JSON is YAML.
    config.loadFromString(
      JSON.stringify({
        'current-context': contextName,
        clusters: [{ name: 'cluster', cluster }],
        users: [{ name: 'user', user: theirs }],
        contexts: [{ name: contextName, context: { cluster: 'cluster', user: 'user', namespace } }],
      }),
    );
    return config;
  }
}

/** A proxy URL without what may be secret in it (user info, path, query). */
function hostOf(url: string | undefined): string {
  try {
    return new URL(url ?? '').host || '(no host)';
  } catch {
    return '(not a URL)';
  }
}
