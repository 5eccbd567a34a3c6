// The kubeconfigs only client-node can serve: the legacy auth providers (gcp,
// azure, oidc) and a cluster behind a proxy (its agent). client-node is
// imported the first time such a KubeConfig authenticates a request, so a
// process that never meets one never pays for it. The bearer token, an exec
// plugin and impersonation stay ours (client-node reads a token file once,
// runs a plugin with no time limit and drops as-groups, as-uid and
// as-user-extra). Through it, the CA and client certificate are read as
// client-node reads them: its agent keeps the ones it started with.
import type https from 'node:https';
import { RequestIdentity, type Token } from './credentials.js';
import type { ResolvedContext } from './file.js';
import type { ExecPlugin } from './exec-plugin.js';
import type { Headers } from './impersonation.js';
import { KubeConfigError, type KubeCluster, type KubeConfig } from './kubeconfig.js';

const OURS = ['token', 'tokenFile', 'token-file', 'exec', 'as', 'as-groups', 'as-uid', 'as-user-extra'];

/** How long a request waits for client-node's credentials (an auth provider may run a command) before it fails. */
export const CLIENT_NODE_TIMEOUT_MS = 30_000;
/** How long a call client-node never ends holds back the next one. */
const TURN_CAP_MS = 5 * 60_000;

/** What stays ours on a context client-node serves. */
export interface OwnCredentials {
  token: Token | undefined;
  plugin: ExecPlugin | undefined;
  impersonation: Headers;
}

export class ClientNodeKubeConfig implements KubeConfig {
  readonly #cluster: KubeCluster;
  readonly #context: ResolvedContext;
  readonly #identity: RequestIdentity;
  #loaded: Promise<KubeConfig> | undefined;
  /** Requests authenticate one at a time: an auth provider's credential is fetched once, then cached. */
  #turn: Promise<unknown> = Promise.resolve();

  constructor(context: ResolvedContext, own: OwnCredentials) {
    this.#context = context;
    this.#identity = new RequestIdentity(own);
    // The transport trims a trailing slash off the server itself.
    this.#cluster = { server: context.cluster.server, proxyUrl: context.cluster['proxy-url'] };
  }

  getCurrentCluster(): KubeCluster {
    return this.#cluster;
  }

  async applyToHTTPSOptions(options: https.RequestOptions): Promise<void> {
    // The next request's turn comes when client-node's call settles, not when this request gives up on it: two
    // refreshes at once may spend one refresh token twice, which a provider may treat as theft.
    const settled = this.#turn.then(() => this.#fromClientNode(options));
    this.#turn = this.#released(settled);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(this.#failure(`gave no credentials within ${CLIENT_NODE_TIMEOUT_MS} ms`)),
        CLIENT_NODE_TIMEOUT_MS,
      );
    });
    try {
      await Promise.race([settled, late]);
    } finally {
      clearTimeout(timer);
    }
    await this.#identity.apply(options);
  }

  /** What client-node's credentials do not cover: our exec plugin's credential, if that is what was refused. */
  onUnauthorized(options: https.RequestOptions): void {
    this.#identity.onUnauthorized(options);
  }

  /**
   * When the next request's turn comes: once `call` settles, or after TURN_CAP_MS if it never does (client-node
   * loaded again then, so one hung call does not fail every request for good).
   */
  #released(call: Promise<void>): Promise<void> {
    return new Promise((release) => {
      const cap = setTimeout(() => {
        this.#loaded = undefined;
        release();
      }, TURN_CAP_MS);
      cap.unref();
      const settle = (): void => {
        clearTimeout(cap);
        release();
      };
      call.then(settle, settle);
    });
  }

  async #fromClientNode(options: https.RequestOptions): Promise<void> {
    this.#loaded ??= this.#load();
    try {
      await (await this.#loaded).applyToHTTPSOptions(options);
    } catch (error) {
      this.#loaded = undefined; // the next request loads and tries again
      // client-node's message may quote an auth provider's output, a token with it: say only where it failed.
      const code = (error as NodeJS.ErrnoException).code;
      throw this.#failure(`failed${typeof code === 'string' ? ` (${code})` : ''}`);
    }
  }

  #failure(what: string): KubeConfigError {
    const { user, cluster } = this.#context;
    const through =
      user['auth-provider'] !== undefined ? 'its auth provider' : `the proxy ${hostOf(cluster['proxy-url'])}`;
    return new KubeConfigError(`context ${this.#context.contextName}: client-node, for ${through}, ${what}`);
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
