// A bearer token mounted from a Secret, re-read when it changes so a rotated
// Secret takes effect without a restart. kubelet swaps Secret volumes through
// a symlink and never leaves the file half written, so a changed
// inode/mtime/size is a new token.
import { readFileSync, statSync } from 'node:fs';
import { normalizeToken } from './token.js';

/** The token in a file, normalized (normalizeToken: the usual trailing newline is not part of it; empty means none). */
export function readTokenFile(path: string): string | undefined {
  return normalizeToken(readFileSync(path, 'utf8'));
}

export interface TokenFileWatch {
  /** The last token read; undefined while the file is empty or was never readable. */
  readonly current: string | undefined;
  close(): void;
}

export interface TokenFileHandlers {
  /** A later read found a different token (not called for the first read). */
  onChange(token: string | undefined): void;
  /** A read failed; the last good token is kept. */
  onError(err: unknown): void;
}

/** Reads the file now, then every `intervalMs`, re-reading only when it changed. */
export function watchTokenFile(path: string, intervalMs: number, handlers: TokenFileHandlers): TokenFileWatch {
  let token: string | undefined;
  let stamp: string | undefined;
  const load = (first: boolean): void => {
    try {
      const next = stampOf(path);
      if (next === stamp) return;
      const value = readTokenFile(path);
      stamp = next;
      if (value === token) return;
      token = value;
      if (!first) handlers.onChange(token);
    } catch (err) {
      handlers.onError(err);
    }
  };
  load(true);
  const timer = setInterval(() => load(false), intervalMs);
  timer.unref();
  return {
    get current() {
      return token;
    },
    close: () => clearInterval(timer),
  };
}

function stampOf(path: string): string {
  const stat = statSync(path);
  return `${stat.ino}:${stat.mtimeMs}:${stat.size}`;
}
