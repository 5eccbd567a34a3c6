// Bearer tokens compared in constant time. Both sides are hashed first, so a
// comparison takes as long whatever the presented token's length; a holder
// across a rotation compares against every token it accepts, so the answer
// takes as long whichever one matched.
import { hash, timingSafeEqual } from 'node:crypto';
import { TokenRotation } from './token-rotation.js';

const DIGEST_BYTES = 32;
// Where each presented token's digest lands: one buffer, reused, since a
// comparison runs start to end without yielding.
const presentedDigest = Buffer.alloc(DIGEST_BYTES);

/**
 * SHA-256 of `text` into `into`. One-shot hashing to a `binary` (latin1: one
 * char per byte) string and copying that is several times cheaper in Node
 * than asking for a Buffer, and this runs on every guarded request.
 */
function digestInto(text: string, into: Buffer): Buffer {
  into.write(hash('sha256', text, 'binary'), 0, DIGEST_BYTES, 'latin1');
  return into;
}

function digestOf(text: string): Buffer {
  return digestInto(text, Buffer.alloc(DIGEST_BYTES));
}

/** Whether `presented` is `expected`, in constant time. */
export function tokensEqual(presented: string, expected: string): boolean {
  return timingSafeEqual(digestInto(presented, presentedDigest), digestOf(expected));
}

export interface AcceptedTokenOptions {
  /** How long a replaced token is still accepted (default 0: refused at once). */
  graceMs?: number;
  now?: () => number;
}

/**
 * The bearer token a server accepts, across rotations (token-rotation.ts): kept as a digest, never compared as text.
 */
export class AcceptedToken {
  readonly #rotation: TokenRotation<Buffer>;
  #generation = 0;

  constructor(value: string | undefined, options: AcceptedTokenOptions = {}) {
    this.#rotation = new TokenRotation(value, {
      graceMs: options.graceMs ?? 0,
      derive: digestOf,
      ...(options.now !== undefined ? { now: options.now } : {}),
    });
  }

  /**
   * A rotated token: accepted from now on, and the one it replaces for the
   * grace period. An empty token counts as none.
   */
  set(value: string | undefined): void {
    if (this.#rotation.set(value)) this.#generation += 1;
  }

  /** Changes whenever the accepted token does: a verdict remembered for one generation is void in the next. */
  get generation(): number {
    return this.#generation;
  }

  get configured(): boolean {
    return this.#rotation.configured;
  }

  /** The token last read. */
  get value(): string | undefined {
    return this.#rotation.token;
  }

  /** Whether `presented` is the token (or the one it replaced, in grace); always false when none is configured. */
  matches(presented: string | undefined): boolean {
    return this.match(presented) !== undefined;
  }

  /**
   * Which token `presented` is: the current one, the replaced one (in grace), or neither (undefined; always when none
   * is configured).
   */
  match(presented: string | undefined): 'current' | 'previous' | undefined {
    const current = this.#rotation.current;
    if (current === undefined || presented === undefined) return undefined;
    const previous = this.#rotation.previous;
    const digest = digestInto(presented, presentedDigest);
    // Both compared (no short cut), and no allocation: this runs on every guarded request.
    const isCurrent = timingSafeEqual(digest, current);
    const isPrevious = previous !== undefined && timingSafeEqual(digest, previous);
    return isCurrent ? 'current' : isPrevious ? 'previous' : undefined;
  }
}
