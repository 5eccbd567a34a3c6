// The uniform fleet token callers present to the agent (what the agent
// presents to sandboxd is the SandboxdClient's). Compared in constant time
// (both sides hashed, so the presented token's length leaks nothing either).
import { hash, timingSafeEqual } from 'node:crypto';
import { TokenRotation } from '@warmpool/runtime';

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

export interface FleetTokenOptions {
  /** How long a replaced token is still accepted (default 0: refused at once). */
  graceMs?: number;
  now?: () => number;
}

export class FleetToken {
  readonly #rotation: TokenRotation<Buffer>;

  constructor(value: string | undefined, options: FleetTokenOptions = {}) {
    this.#rotation = new TokenRotation(value, {
      graceMs: options.graceMs ?? 0,
      derive: (token) => digestInto(token, Buffer.alloc(DIGEST_BYTES)),
      ...(options.now !== undefined ? { now: options.now } : {}),
    });
  }

  /**
   * A rotated token: accepted from now on, and the one it replaces for the
   * grace period. An empty token counts as none: the agent then refuses
   * every call rather than run open.
   */
  set(value: string | undefined): void {
    this.#rotation.set(value);
  }

  get configured(): boolean {
    return this.#rotation.configured;
  }

  get value(): string | undefined {
    return this.#rotation.token;
  }

  /** Whether `presented` is the fleet token (or the one it replaced, in grace); always false when none is configured. */
  matches(presented: string | undefined): boolean {
    const current = this.#rotation.current;
    if (current === undefined || presented === undefined) return false;
    const digest = digestInto(presented, presentedDigest);
    if (timingSafeEqual(digest, current)) return true;
    const previous = this.#rotation.previous;
    return previous !== undefined && timingSafeEqual(digest, previous);
  }
}
