// The router as a process: --help and --version, and a bad flag refused with
// its reason (exit 2) before anything starts.
import { join } from 'node:path';
import { REPO_ROOT, runCommand } from '@warmpool/harness';
import { describe, expect, it } from 'vitest';

const MAIN = join(REPO_ROOT, 'apps/router/dist/main.js');

function router(...args: string[]) {
  return runCommand({ name: 'router', command: process.execPath, args: [MAIN, ...args], timeoutMs: 20_000 });
}

describe('router process', () => {
  it('prints its flags with --help', async () => {
    const result = await router('--help');
    expect(result.code).toBe(0);
    for (const flag of [
      '--listen',
      '--tokenless-user',
      '--runtime-port',
      '--proxy-timeout',
      '--route-cache-ttl',
      '--log-format',
    ])
      expect(result.stdout).toContain(flag);
  });

  it.each([
    [['--listen=nowhere'], '--listen'],
    [['--runtime-port=70000'], '--runtime-port'],
    [['--review-cache-ttl=1m'], '--review-cache-ttl'],
    [['--tokenless-user= '], '--tokenless-user'],
    [['--log-format=xml'], '--log-format'],
    [['--log-level=degub'], '--log-level'],
  ])('refuses %j (exit 2, naming %s)', async (args, flag) => {
    const result = await router(...args);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(flag);
  });
});
