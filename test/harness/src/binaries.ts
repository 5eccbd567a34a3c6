// Where the Kubernetes binaries built by `make kube-binaries` live.
import { accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';

export type KubeBinary = 'kube-apiserver' | 'etcd' | 'kubectl' | 'helm';

/** `$WARMPOOL_CACHE/bin`, default `~/.cache/warmpool/bin` (same rule as kube-binaries.sh). */
export function binDir(): string {
  return join(process.env.WARMPOOL_CACHE ?? join(homedir(), '.cache', 'warmpool'), 'bin');
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function findBinary(name: KubeBinary): string {
  const path = join(binDir(), name);
  if (isExecutable(path)) return path;
  throw new Error(`${name} not found at ${path}: run \`make kube-binaries\` (builds kube-apiserver, etcd, kubectl and helm into ${binDir()})`);
}

/** A program from PATH, or undefined. */
export function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const path = join(dir, name);
    if (isExecutable(path)) return path;
  }
  return undefined;
}
