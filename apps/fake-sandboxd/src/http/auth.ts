// Bearer tokens compared in constant time. Both sides are hashed first so the
// comparison takes the same time whatever the presented token's length.
import { createHash, timingSafeEqual } from 'node:crypto';
import { TokenRotation } from '@warmpool/runtime';

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

export function tokensEqual(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected));
}

export interface RootAuthOptions {
  /** After rotate(), how long the replaced token still acts as root (default 0). */
  graceMs?: number;
  now?: () => number;
}

/**
 * The node's root credential. A node configured without a token accepts every
 * caller as root: that is the real daemon's behaviour (and why the node agent
 * must never run one that way).
 */
export class RootAuth {
  readonly #rotation: TokenRotation<Buffer>;

  constructor(apiToken: string | undefined, options: RootAuthOptions = {}) {
    this.#rotation = new TokenRotation(apiToken, {
      graceMs: options.graceMs ?? 0,
      derive: digest,
      ...(options.now !== undefined ? { now: options.now } : {}),
    });
  }

  get open(): boolean {
    return !this.#rotation.configured;
  }

  /** A rotated token: root from now on, and the one it replaces for the grace period. */
  rotate(apiToken: string): void {
    this.#rotation.set(apiToken);
  }

  /** Whether a request with this bearer token acts as root. */
  allows(presented: string | undefined): boolean {
    if (this.open) return true;
    if (presented === undefined) return false;
    const hashed = digest(presented);
    let allowed = false;
    // Both compared, so the answer takes as long whichever token matched.
    for (const expected of this.#rotation.accepted()) allowed = timingSafeEqual(hashed, expected) || allowed;
    return allowed;
  }
}
