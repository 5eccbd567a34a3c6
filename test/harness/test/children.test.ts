// The orphan guarantee: a child started by the harness dies, and its temp dir
// goes, even when the test process is killed with SIGKILL and runs no handler.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { binDir, findBinary } from '../src/binaries.js';
import { ManagedChild, WATCHDOG_SCRIPT, isAlive, processGroupMembers, runCommand } from '../src/children.js';
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

describe('a managed child', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  /** `sh -c script` behind the watchdog, its log (and stdout, if `splitStdout`) in a fresh dir. */
  const shell = (script: string, splitStdout = false): ManagedChild => {
    const dir = mkdtempSync(join(tmpdir(), 'warmpool-child-'));
    dirs.push(dir);
    return new ManagedChild({
      name: 'sh',
      command: '/bin/sh',
      args: ['-c', script],
      logFile: join(dir, 'log'),
      ...(splitStdout ? { stdoutFile: join(dir, 'stdout') } : {}),
      orphanCleanupDir: dir,
    });
  };

  it('logs stdout and stderr together, or keeps stdout apart when given a stdoutFile', async () => {
    const together = shell('echo out; echo err >&2');
    expect(await together.exited).toEqual({ code: 0, signal: null });
    expect(together.log()).toBe('out\nerr\n');
    expect(together.stdout()).toBe('out\nerr\n');

    const apart = shell('echo out; echo err >&2; exit 3', true);
    expect(await apart.exited).toEqual({ code: 3, signal: null });
    expect(apart.log()).toBe('err\n');
    expect(apart.stdout()).toBe('out\n');
  });

  it('finds a logged line only once it is complete, and returns what the finder made of it', async () => {
    const child = shell("printf 'serving on 4' >&2; sleep 0.5; printf '2\\nmore\\n' >&2; sleep 30");
    const port = await child.logged((line) => /^serving on (\d+)$/.exec(line)?.[1]);
    expect(port).toBe('42');
    await child.stop('SIGKILL');
  });

  it('skips a line the finder throws on', async () => {
    const child = shell('echo \'{not json\' >&2; echo \'{"msg":"serving"}\' >&2; sleep 30');
    const parse = (line: string): string | undefined => (JSON.parse(line) as { msg?: string }).msg;
    expect(await child.logged(parse)).toBe('serving');
    await child.stop('SIGKILL');
  });

  it('takes the last line without a newline once the child has exited', async () => {
    const child = shell("printf 'done' >&2");
    expect(await child.logged((line) => (line === 'done' ? line : undefined))).toBe('done');
  });

  it('fails as soon as the child exits without logging the line, with its last lines', async () => {
    const child = shell('echo boom >&2; exit 3');
    await expect(
      child.logged((line) => (line === 'serving' ? line : undefined), { timeoutMs: 120_000, what: 'serving' }),
    ).rejects.toThrow(/sh exited \(\{"code":3,"signal":null\}\) before logging[^]*serving[^]*boom/);
  });
});

describe('runCommand', () => {
  it('runs a command to its end: its stdin given, in its directory, stdout and stderr apart', async () => {
    const result = await runCommand({
      command: '/bin/sh',
      args: ['-c', 'read line; echo "got $line in $(pwd)"; echo warned >&2; exit 4'],
      input: 'hello\n',
      cwd: tmpdir(),
    });
    expect(result).toEqual({ code: 4, signal: null, stdout: `got hello in ${tmpdir()}\n`, stderr: 'warned\n' });
  });

  it('kills a command that outlives its timeout, its group and all', async () => {
    const result = await runCommand({
      command: '/bin/sh',
      args: ['-c', 'echo $$; sleep 600 & wait'],
      // Time enough for the echo on a loaded machine.
      timeoutMs: 3_000,
    });
    expect(result).toMatchObject({ code: null, signal: 'SIGKILL' });
    const pgid = Number(result.stdout.trim());
    expect(pgid).toBeGreaterThan(0);
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
