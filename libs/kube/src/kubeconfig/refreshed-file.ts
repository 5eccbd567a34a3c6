// A credential file read again once it is older than the refresh interval:
// service-account tokens are projected and rotate (the kubelet swaps them
// hourly), and so may a mounted CA or client certificate. Once a minute is
// client-go's interval for tokens; between reads a request costs no I/O.
import { readFileSync } from 'node:fs';
import { KubeConfigError } from './kubeconfig.js';

export const REFRESH_MS = 60_000;

export class RefreshedFile {
  readonly path: string;
  readonly #refreshMs: number;
  readonly #now: () => number;
  #content: Buffer | undefined;
  #readAt = 0;

  constructor(path: string, options: { refreshMs?: number; now?: () => number } = {}) {
    this.path = path;
    this.#refreshMs = options.refreshMs ?? REFRESH_MS;
    this.#now = options.now ?? Date.now;
  }

  /** The file's bytes, read at most once per refresh interval; throws KubeConfigError when it cannot be read. */
  read(): Buffer {
    const now = this.#now();
    if (this.#content === undefined || now - this.#readAt >= this.#refreshMs) {
      try {
        this.#content = readFileSync(this.path);
      } catch (error) {
        throw new KubeConfigError(`cannot read ${this.path}: ${(error as Error).message}`, { cause: error });
      }
      this.#readAt = now;
    }
    return this.#content;
  }
}
