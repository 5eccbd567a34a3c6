// The node's root credential, compared in constant time (libs/runtime's
// AcceptedToken). A node configured without a token accepts every caller as
// root: that is the real daemon's behaviour (and why the node agent must never
// run one that way).
import { AcceptedToken } from '@warmpool/runtime';

export interface RootAuthOptions {
  /** After rotate(), how long the replaced token still acts as root (default 0). */
  graceMs?: number;
  now?: () => number;
}

export class RootAuth {
  readonly #token: AcceptedToken;

  constructor(apiToken: string | undefined, options: RootAuthOptions = {}) {
    this.#token = new AcceptedToken(apiToken, options);
  }

  get open(): boolean {
    return !this.#token.configured;
  }

  /** A rotated token: root from now on, and the one it replaces for the grace period. */
  rotate(apiToken: string): void {
    this.#token.set(apiToken);
  }

  /** Whether a request with this bearer token acts as root. */
  allows(presented: string | undefined): boolean {
    return this.open || this.#token.matches(presented);
  }
}
