// The uniform fleet token: what callers present to the agent, and what the
// agent presents to sandboxd as root. Compared in constant time (both sides
// hashed, so the presented token's length leaks nothing either).
import { hash, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';

// One-shot hashing: no Hash object per request on the claim path.
function digest(text: string): Buffer {
  return hash('sha256', text, 'buffer');
}

/** The token of an `Authorization: Bearer <token>` header, if any. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return match?.[1];
}

export class FleetToken {
  #value: string | undefined;
  #digest: Buffer | undefined;

  constructor(value: string | undefined) {
    this.#value = undefined;
    this.set(value);
  }

  /** An empty token counts as none: the agent then refuses every call rather than run open. */
  set(value: string | undefined): void {
    const token = value?.trim();
    this.#value = token === undefined || token === '' ? undefined : token;
    this.#digest = this.#value === undefined ? undefined : digest(this.#value);
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
    return timingSafeEqual(digest(presented), this.#digest);
  }
}

/** Reads a token file as mounted from a Secret: surrounding whitespace (the usual trailing newline) is not part of it. */
export function readTokenFile(path: string): string {
  return readFileSync(path, 'utf8').trim();
}

export interface TokenFileWatch {
  close(): void;
}

/**
 * Re-reads the token file when it changes, so a rotated Secret takes effect
 * without a restart. A file that disappears or cannot be read keeps the last
 * good token (kubelet swaps Secret volumes through a symlink, never leaving
 * the file half written).
 */
export function watchTokenFile(path: string, intervalMs: number, onChange: (token: string) => void, onError: (err: unknown) => void): TokenFileWatch {
  let lastStamp = stampOf(path);
  const timer = setInterval(() => {
    try {
      const stamp = stampOf(path);
      if (stamp === lastStamp) return;
      lastStamp = stamp;
      onChange(readTokenFile(path));
    } catch (err) {
      onError(err);
    }
  }, intervalMs);
  timer.unref();
  return { close: () => clearInterval(timer) };
}

function stampOf(path: string): string {
  const stat = statSync(path);
  return `${stat.ino}:${stat.mtimeMs}:${stat.size}`;
}
