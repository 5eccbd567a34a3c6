// Who a bearer token is, as sandboxd resolves it: the node's root token, one
// of its tenants' tokens, or nobody. Compared in constant time (libs/runtime's
// AcceptedToken). A node configured with neither a root token nor tenants
// accepts every caller as root on its node-level endpoints: that is the real
// daemon's behaviour (and why the node agent must never run one that way).
import { AcceptedToken } from '@warmpool/runtime';

export interface RootAuthOptions {
  /** After rotate(), how long the replaced token still acts as root (default 0). */
  graceMs?: number;
  now?: () => number;
  /** Tenant name → its token. A tenant may claim and list its own claims; operator surfaces answer it 403. */
  tenants?: Readonly<Record<string, string>>;
}

/** The caller of a node-level endpoint: root (the operator), or a tenant by name. */
export type Caller = { readonly kind: 'root' } | { readonly kind: 'tenant'; readonly tenant: string };

const ROOT: Caller = { kind: 'root' };

export class RootAuth {
  readonly #token: AcceptedToken;
  readonly #tenants: ReadonlyArray<{ name: string; token: AcceptedToken }>;

  constructor(apiToken: string | undefined, options: RootAuthOptions = {}) {
    this.#token = new AcceptedToken(apiToken, options);
    this.#tenants = Object.entries(options.tenants ?? {}).map(([name, token]) => ({
      name,
      token: new AcceptedToken(token),
    }));
  }

  /** Neither a root token nor a tenant: every caller is root on the node-level endpoints. */
  get open(): boolean {
    return !this.#token.configured && this.#tenants.length === 0;
  }

  /** A rotated token: root from now on, and the one it replaces for the grace period. */
  rotate(apiToken: string): void {
    this.#token.set(apiToken);
  }

  /** Whether a request with this bearer token acts as root. */
  allows(presented: string | undefined): boolean {
    return this.callerOf(presented)?.kind === 'root';
  }

  /** Who presents this token on a node-level endpoint; undefined = nobody (401). */
  callerOf(presented: string | undefined): Caller | undefined {
    if (this.open || this.#token.matches(presented)) return ROOT;
    // Every tenant is compared, so the time taken does not tell which one matched.
    let tenant: string | undefined;
    for (const t of this.#tenants) if (t.token.matches(presented) && tenant === undefined) tenant = t.name;
    return tenant === undefined ? undefined : { kind: 'tenant', tenant };
  }

  /**
   * Whether this is the configured root token itself, which acts by id on any sandbox and is shown sandbox tokens.
   * An open node has none: there, only a sandbox's own token acts on it.
   */
  isRootToken(presented: string | undefined): boolean {
    return this.#token.matches(presented);
  }
}
