// Bearer tokens compared in constant time. Both sides are hashed first so the
// comparison takes the same time whatever the presented token's length.
import { createHash, timingSafeEqual } from 'node:crypto';

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

export function tokensEqual(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected));
}

/**
 * The node's root credential. A node configured without a token accepts every
 * caller as root: that is the real daemon's behaviour (and why the node agent
 * must never run one that way).
 */
export class RootAuth {
  private readonly expected: Buffer | undefined;

  constructor(apiToken: string | undefined) {
    this.expected = apiToken === undefined || apiToken === '' ? undefined : digest(apiToken);
  }

  get open(): boolean {
    return this.expected === undefined;
  }

  /** Whether a request with this bearer token acts as root. */
  allows(presented: string | undefined): boolean {
    if (this.expected === undefined) return true;
    return presented !== undefined && timingSafeEqual(digest(presented), this.expected);
  }
}
