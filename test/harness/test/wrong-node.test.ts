// Every entry point on a Node.js that is too old: a clear message and exit
// code 2, never a stack trace from a dependency. Runs the built dist (`make
// test` builds first) with an older node found on this machine.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MINIMUM_NODE_VERSION, nodeVersionSatisfies } from '../../../libs/runtime/src/node-version.js';
import { REPO_ROOT, runCommand } from '../src/index.js';

const ENTRY_POINTS = {
  'control-plane': 'apps/control-plane/dist/main.js',
  'node-agent': 'apps/node-agent/dist/main.js',
  'fake-sandboxd': 'apps/fake-sandboxd/dist/main.js',
  'stack-main': 'test/harness/dist/stack-main.js',
} as const;

/** A node binary older than the apps need: $WARMPOOL_OLD_NODE, else the distribution's. */
async function findOldNode(): Promise<string | undefined> {
  const candidates = [process.env['WARMPOOL_OLD_NODE'], '/usr/bin/node', '/usr/local/bin/node', '/bin/node'];
  for (const candidate of candidates) {
    if (candidate === undefined || !existsSync(candidate)) continue;
    const run = await runCommand({ command: candidate, args: ['--version'] });
    // One that does not run (exit code not 0) is passed over.
    if (run.code === 0 && !nodeVersionSatisfies(run.stdout.trim())) return candidate;
  }
  return undefined;
}

const oldNode = await findOldNode();

describe.skipIf(oldNode === undefined)(
  `entry points on a Node.js older than ${MINIMUM_NODE_VERSION} (${oldNode ?? `none found on this machine: set WARMPOOL_OLD_NODE to run this`})`,
  () => {
    it.each(Object.entries(ENTRY_POINTS))(
      '%s says which Node.js it needs and where make puts it, and exits 2',
      async (program, entry) => {
        const run = await runCommand({
          command: oldNode as string,
          args: [join(REPO_ROOT, entry), '--help'],
          timeoutMs: 20_000,
        });
        expect(run.code).toBe(2);
        expect(run.stderr).toContain(`${program}: needs Node.js >= ${MINIMUM_NODE_VERSION}`);
        expect(run.stderr).toContain('.cache/warmpool/node-24/bin');
        expect(run.stderr).not.toMatch(/\n\s+at /);
        expect(run.stdout).toBe('');
      },
    );
  },
);
