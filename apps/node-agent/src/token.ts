// The uniform fleet token: what callers present to the agent, and what the
// agent presents to sandboxd as root. Compared in constant time (both sides
// hashed, so the presented token's length leaks nothing either).
import { hash, timingSafeEqual } from 'node:crypto';
import { normalizeToken } from '@warmpool/runtime';

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

// Re-export kept for branches in flight; import from @warmpool/runtime
export { bearerToken } from '@warmpool/runtime';

export class FleetToken {
  #value: string | undefined;
  #digest: Buffer | undefined;

  constructor(value: string | undefined) {
    this.#value = undefined;
    this.set(value);
  }

  /** An empty token counts as none: the agent then refuses every call rather than run open. */
  set(value: string | undefined): void {
    this.#value = normalizeToken(value);
    this.#digest = this.#value === undefined ? undefined : digestInto(this.#value, Buffer.alloc(DIGEST_BYTES));
  }

  get configured(): boolean {
    return this.#value !== undefined;
  }

  get value(): string | undefined {
    return this.#value;
  }

  /** Whether `presented` is the fleet token; always false when none is configured. */
  matches(presented: string | undefined): boolean {
    if (this.#digest === undefined || presented === undefined) return false;
    return timingSafeEqual(digestInto(presented, presentedDigest), this.#digest);
  }
}
