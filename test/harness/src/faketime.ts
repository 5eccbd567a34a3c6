// libfaketime's `faketime` wrapper, for running a process with its clock off
// (Debian package `faketime`). Installed on demand like redis-server; a
// machine where it cannot be installed gets a reason to skip with.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { findOnPath } from './binaries.js';

/**
 * `env(offset)`: the environment that runs a process (and only it, so its pid
 * is the process's own, for signals) with its clocks off by `offset`, in
 * libfaketime's syntax (`-10m`, `+2h`). Monotonic clocks move by the same
 * constant offset, so intervals are unchanged.
 */
export type FaketimeLookup = { path: string; env: (offset: string) => Record<string, string> } | { missing: string };

function preloadLibrary(): string | undefined {
  for (const dir of ['/usr/lib', '/usr/local/lib']) {
    let entries: string[];
    try {
      entries = readdirSync(dir);
    } catch {
      continue;
    }
    for (const entry of ['', ...entries]) {
      const lib = join(dir, entry, 'faketime', 'libfaketimeMT.so.1');
      if (existsSync(lib)) return lib;
    }
  }
  return undefined;
}

let cached: FaketimeLookup | undefined;

/** The faketime binary, installing the Debian package when it is missing and this process may. */
export function ensureFaketime(): FaketimeLookup {
  if (cached !== undefined) return cached;
  let path = findOnPath('faketime');
  if (path === undefined && process.getuid?.() === 0 && findOnPath('apt-get') !== undefined) {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    let install = spawnSync('apt-get', ['install', '-y', '-qq', 'faketime'], {
      env,
      encoding: 'utf8',
      timeout: 300_000,
    });
    if (install.status !== 0) {
      spawnSync('apt-get', ['update', '-qq'], { env, timeout: 300_000 });
      install = spawnSync('apt-get', ['install', '-y', '-qq', 'faketime'], { env, encoding: 'utf8', timeout: 300_000 });
    }
    path = findOnPath('faketime');
    if (path === undefined)
      return (cached = {
        missing: `faketime is not installed and \`apt-get install faketime\` failed: ${(install.stderr ?? '').trim().split('\n').pop() ?? ''}`,
      });
  }
  if (path === undefined)
    return (cached = {
      missing: 'faketime is not installed (Debian package faketime) and this process cannot install it',
    });
  const lib = preloadLibrary();
  if (lib === undefined)
    return (cached = { missing: 'faketime is installed but libfaketimeMT.so.1 was not found under /usr/lib' });
  return (cached = { path, env: (offset) => ({ LD_PRELOAD: lib, FAKETIME: offset, FAKETIME_NO_CACHE: '1' }) });
}
