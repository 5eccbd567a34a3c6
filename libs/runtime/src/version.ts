// What `--version` prints and `warmpool_build_info` carries: the app's
// package.json version, read once next to its compiled code (dist/ sits beside
// package.json in the repo and in the images).
import { readFileSync } from 'node:fs';

/**
 * The `version` of the package.json one directory above the folder of `moduleUrl` (dist/process.js → package.json);
 * "unknown" if unreadable.
 */
export function packageVersion(moduleUrl: string): string {
  try {
    const manifest = JSON.parse(readFileSync(new URL('../package.json', moduleUrl), 'utf8')) as { version?: unknown };
    return typeof manifest.version === 'string' ? manifest.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** `control-plane 0.1.0 (node v24.1.0, linux/x64)`. */
export function versionLine(program: string, version: string): string {
  return `${program} ${version} (node ${process.version}, ${process.platform}/${process.arch})\n`;
}
