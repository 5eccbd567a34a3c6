// The first thing every warmpool process runs: a check that this Node.js can
// run it, with a message a person can act on. It must stay free of imports
// (and is reached through its own subpath, not the package index): an ES
// module's static imports are loaded before its body runs, so anything
// heavier here (undici, client-node) would crash an old Node before the
// check could speak.

/**
 * The oldest Node.js every app runs on: undici 8 (client-node 2's HTTP) needs 22.19. Every package.json's `engines`
 * says the same.
 */
export const MINIMUM_NODE_VERSION = '22.19.0';

/** Where `make node` (and so every make target) installs the Node.js the project is developed with. */
export const MAKE_NODE_BIN = '~/.cache/warmpool/node-24/bin';

/** Exit code of a process that cannot run here, as for a configuration error. */
export const WRONG_NODE_EXIT_CODE = 2;

function parts(version: string): [number, number, number] {
  const [major = 0, minor = 0, patch = 0] = version
    .replace(/^v/, '')
    .split('.')
    .map((part) => Number.parseInt(part, 10) || 0);
  return [major, minor, patch];
}

/** Whether `version` (e.g. `v20.20.2` or `22.19.0`) is at least `minimum`. */
export function nodeVersionSatisfies(version: string, minimum: string = MINIMUM_NODE_VERSION): boolean {
  const have = parts(version);
  const want = parts(minimum);
  for (let i = 0; i < 3; i++) {
    if (have[i] !== want[i]) return (have[i] as number) > (want[i] as number);
  }
  return true;
}

/** The message for a Node.js that is too old; undefined when `version` will do. */
export function wrongNodeMessage(program: string, version: string = process.version): string | undefined {
  if (nodeVersionSatisfies(version)) return undefined;
  return (
    `${program}: needs Node.js >= ${MINIMUM_NODE_VERSION}, but this is Node.js ${version} (${process.execPath}).\n` +
    `  \`make node\` (which every make target runs) installs Node.js 24 into ${MAKE_NODE_BIN}:\n` +
    `  run ${MAKE_NODE_BIN}/node ..., or put ${MAKE_NODE_BIN} first on PATH.\n`
  );
}

/** Ends the process with exit code 2 and the message above unless this Node.js will do. */
export function requireSupportedNode(program: string): void {
  const message = wrongNodeMessage(program);
  if (message === undefined) return;
  process.stderr.write(message);
  process.exit(WRONG_NODE_EXIT_CODE);
}
