// A credential file read again once it is older than the refresh interval:
// service-account tokens are projected and rotate (the kubelet swaps them
// hourly), and so may a mounted CA or client certificate. Once a minute is
// client-go's interval for tokens; between reads a request costs no I/O.
// A read that fails, or gives content the caller refuses (an empty token, a
// file caught mid-write), keeps the last good content, as client-go's cached
// token source does; only a file never read well fails the request.
import { readFileSync } from 'node:fs';
import { KubeConfigError } from './kubeconfig.js';

export const REFRESH_MS = 60_000;

export interface RefreshedFileOptions {
  refreshMs?: number;
  now?: () => number;
  /** Why `content` cannot be used, or undefined when it can. */
  refuse?: (content: Buffer) => string | undefined;
}

export class RefreshedFile {
  readonly path: string;
  readonly #refreshMs: number;
  readonly #now: () => number;
  readonly #refuse: (content: Buffer) => string | undefined;
  #content: Buffer | undefined;
  #readAt = Number.NEGATIVE_INFINITY;

  constructor(path: string, options: RefreshedFileOptions = {}) {
    this.path = path;
    this.#refreshMs = options.refreshMs ?? REFRESH_MS;
    this.#now = options.now ?? Date.now;
    this.#refuse = options.refuse ?? (() => undefined);
  }

  /** The file's bytes, read at most once per refresh interval; throws KubeConfigError while it never read well. */
  read(): Buffer {
    const now = this.#now();
    if (now - this.#readAt < this.#refreshMs && this.#content !== undefined) return this.#content;
    this.#readAt = now;
    let problem: string;
    try {
      const content = readFileSync(this.path);
      const refused = this.#refuse(content);
      if (refused === undefined) return (this.#content = content);
      problem = refused;
    } catch (error) {
      problem = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    }
    if (this.#content !== undefined) return this.#content;
    throw new KubeConfigError(`cannot use ${this.path}: ${problem}`);
  }
}

/** A PEM file (a CA, a certificate, a key): one caught empty or mid-write keeps the last good content. */
export function pemFile(path: string, options: Omit<RefreshedFileOptions, 'refuse'> = {}): RefreshedFile {
  return new RefreshedFile(path, {
    ...options,
    refuse: (content) => (content.includes('-----BEGIN') && content.includes('-----END') ? undefined : 'no PEM block'),
  });
}
