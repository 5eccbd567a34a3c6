// Where the Kubernetes binaries built by `make kube-binaries` live, and the
// small wrapper that builds them when a test runs on a machine without them.
import { execFileSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type KubeBinary = 'kube-apiserver' | 'etcd' | 'kubectl' | 'helm';
/** What real nodes add (kube-binaries.sh --nodes). */
export type NodeBinary =
  | 'kubelet'
  | 'kube-controller-manager'
  | 'kube-scheduler'
  | 'kube-proxy'
  | 'coredns'
  | 'containerd'
  | 'containerd-shim-runc-v2'
  | 'ctr'
  | 'crictl';

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

const BUILD_SCRIPT = fileURLToPath(new URL('../kube-binaries.sh', import.meta.url));

/**
 * Builds every missing binary from its Go modules (kube-binaries.sh; minutes
 * the first time on a machine, a no-op after). `make test` runs it before the
 * tests; this covers a bare `npx vitest run` on a fresh machine.
 */
export function ensureKubeBinaries(): void {
  try {
    execFileSync(BUILD_SCRIPT, ['--check'], { stdio: 'ignore' });
    return;
  } catch {
    // missing: build below
  }
  process.stderr.write(
    `warmpool: building kube-apiserver, etcd, kubectl and helm into ${binDir()} (once per machine)...\n`,
  );
  execFileSync(BUILD_SCRIPT, [], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, WARMPOOL_CACHE: join(binDir(), '..') },
  });
}

/** The binary's path; builds the missing ones first unless WARMPOOL_NO_BUILD=1. */
export function findBinary(name: KubeBinary): string {
  const path = join(binDir(), name);
  if (isExecutable(path)) return path;
  if (process.env.WARMPOOL_NO_BUILD !== '1') ensureKubeBinaries();
  if (isExecutable(path)) return path;
  throw new Error(
    `${name} not found at ${path}: run \`make kube-binaries\` (builds kube-apiserver, etcd, kubectl and helm into ${binDir()})`,
  );
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

/**
 * Builds what real nodes need when any of it is missing (kube-binaries.sh
 * --nodes: kubelet, kube-controller-manager, kube-scheduler, kube-proxy,
 * CoreDNS, containerd 2, crictl; runc and the CNI plugins from Debian's
 * packages). Tens of minutes the first time on a machine, a no-op after.
 */
export function ensureNodeBinaries(): void {
  try {
    execFileSync(BUILD_SCRIPT, ['--nodes', '--check'], { stdio: 'ignore' });
    return;
  } catch {
    // missing: build below
  }
  process.stderr.write(`warmpool: building the node binaries into ${binDir()} (once per machine)...\n`);
  execFileSync(BUILD_SCRIPT, ['--nodes'], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, WARMPOOL_CACHE: join(binDir(), '..') },
  });
}

/** A node binary's path (built first when missing, unless WARMPOOL_NO_BUILD=1). */
export function findNodeBinary(name: NodeBinary): string {
  const path = join(binDir(), name);
  if (!isExecutable(path) && process.env.WARMPOOL_NO_BUILD !== '1') ensureNodeBinaries();
  if (isExecutable(path)) return path;
  throw new Error(`${name} not found at ${path}: run \`test/harness/kube-binaries.sh --nodes\``);
}
