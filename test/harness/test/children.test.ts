// The orphan guarantee: a child started by the harness dies, and its temp dir
// goes, even when the test process is killed with SIGKILL and runs no handler.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { binDir, findBinary } from '../src/binaries.js';
import { WATCHDOG_SCRIPT, isAlive, processGroupMembers } from '../src/children.js';
import { eventually } from '../src/wait.js';

describe('the child watchdog', () => {
  it('kills the child and removes its dir when the parent is SIGKILLed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'warmpool-watchdog-'));
    writeFileSync(join(dir, 'data'), 'x');
    // A stand-in parent: a Node process that starts `sleep` behind the watchdog,
    // detached in its own group exactly as ManagedChild does, then reports its pid.
    const parentScript = `
      const { spawn } = require('node:child_process');
      const child = spawn('/bin/sh', ['-c', process.argv[1], 'watchdog', String(process.pid), process.argv[2], 'sleep', '600'],
        { detached: true, stdio: 'ignore' });
      process.stdout.write(String(child.pid) + '\\n');
      setInterval(() => {}, 1000);`;
    const parent = spawn(process.execPath, ['-e', parentScript, WATCHDOG_SCRIPT, dir], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const childPid = await new Promise<number>((resolve) =>
      parent.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))),
    );
    expect(isAlive(childPid)).toBe(true);

    parent.kill('SIGKILL');

    expect(await eventually(() => !isAlive(childPid) && processGroupMembers(childPid).length === 0)).toBe(true);
    expect(await eventually(() => !existsSync(dir))).toBe(true);
  });

  it('exits by itself once the child exits normally', async () => {
    const child = spawn('/bin/sh', ['-c', WATCHDOG_SCRIPT, 'watchdog', String(process.pid), '', 'sleep', '0.2'], {
      detached: true,
      stdio: 'ignore',
    });
    const pgid = child.pid ?? 0;
    await new Promise((resolve) => child.once('exit', resolve));
    expect(await eventually(() => processGroupMembers(pgid).length === 0, { timeoutMs: 5000 })).toBe(true);
  });
});

describe('findBinary', () => {
  it('tells to run make kube-binaries when a binary is missing and building is turned off', () => {
    const cache = process.env.WARMPOOL_CACHE;
    const empty = mkdtempSync(join(tmpdir(), 'warmpool-empty-cache-'));
    process.env.WARMPOOL_CACHE = empty;
    process.env.WARMPOOL_NO_BUILD = '1';
    try {
      expect(binDir()).toBe(join(empty, 'bin'));
      expect(() => findBinary('kube-apiserver')).toThrow(/kube-apiserver not found at .*: run `make kube-binaries`/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
      delete process.env.WARMPOOL_NO_BUILD;
      if (cache === undefined) delete process.env.WARMPOOL_CACHE;
      else process.env.WARMPOOL_CACHE = cache;
    }
  });
});
