// The uniform fleet token the control plane presents to every node agent.
// Empty means none: the driver is fail-closed and pushes nothing rather than
// drive nodes unauthenticated.
import { readFileSync, statSync } from 'node:fs';

/** Where the current token comes from; read at every call, so a rotated Secret takes effect. */
export type TokenSource = () => string | undefined;

/** A fixed token; empty or blank counts as none. */
export function staticToken(value: string | undefined): TokenSource {
  const token = normalize(value);
  return () => token;
}

function normalize(value: string | undefined): string | undefined {
  const token = value?.trim();
  return token === undefined || token === '' ? undefined : token;
}

/** Reads a token file as mounted from a Secret: surrounding whitespace (the usual trailing newline) is not part of it. */
export function readTokenFile(path: string): string | undefined {
  return normalize(readFileSync(path, 'utf8'));
}

export interface TokenFile {
  readonly source: TokenSource;
  close(): void;
}

/**
 * A token file re-read when it changes (kubelet swaps Secret volumes through a
 * symlink, so a changed inode/mtime/size is a new token). A file that cannot be
 * read at first means no token (fail-closed) until it can; later read errors
 * keep the last good token. `onError` hears about both.
 */
export function watchTokenFile(path: string, intervalMs: number, onError: (err: unknown) => void, onChange?: (configured: boolean) => void): TokenFile {
  let token: string | undefined;
  let stamp: string | undefined;
  const load = (): void => {
    const next = stampOf(path);
    if (next === stamp) return;
    const value = readTokenFile(path);
    stamp = next;
    const changed = value !== token;
    token = value;
    if (changed) onChange?.(token !== undefined);
  };
  try {
    load();
  } catch (err) {
    onError(err);
  }
  const timer = setInterval(() => {
    try {
      load();
    } catch (err) {
      onError(err);
    }
  }, intervalMs);
  timer.unref();
  return { source: () => token, close: () => clearInterval(timer) };
}

function stampOf(path: string): string {
  const stat = statSync(path);
  return `${stat.ino}:${stat.mtimeMs}:${stat.size}`;
}
