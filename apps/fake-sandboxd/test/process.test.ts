// fake-sandboxd as a process: the built dist/main.js (run `npx tsc -b apps/fake-sandboxd` first).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';

const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const children: ChildProcess[] = [];

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function run(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): { child: ChildProcess; exited: Promise<Exit>; stderrLines: AsyncIterable<string> } {
  const child = spawn(process.execPath, [MAIN, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  const lines: string[] = [];
  const waiters: Array<() => void> = [];
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
    lines.push(...d.toString().split('\n').filter(Boolean));
    for (const wake of waiters.splice(0)) wake();
  });
  const exited = new Promise<Exit>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  const stderrLines: AsyncIterable<string> = {
    async *[Symbol.asyncIterator]() {
      for (let i = 0; ; i++) {
        while (i >= lines.length) {
          if (child.exitCode !== null) return;
          await new Promise<void>((resolve) => waiters.push(resolve));
        }
        yield lines[i] as string;
      }
    },
  };
  return { child, exited, stderrLines };
}

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run "npx tsc -b apps/fake-sandboxd" first`);
});

afterEach(() => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** The address the process logs once it serves (undefined if it never does). */
async function servingAddress(stderrLines: AsyncIterable<string>): Promise<string | undefined> {
  for await (const line of stderrLines) {
    const record = JSON.parse(line) as { msg: string; address?: string };
    if (record.msg === 'serving') return record.address;
  }
  return undefined;
}

describe('fake-sandboxd process', () => {
  it('prints every flag with its env variable on --help and exits 0', async () => {
    const { exited } = run(['--help']);
    const { code, stdout } = await exited;
    expect(code).toBe(0);
    for (const flag of [
      '--listen',
      '--api-token',
      '--api-token-file',
      '--token-grace',
      '--max-claims',
      '--room',
      '--refill-rate',
      '--refill-concurrency',
      '--warm-claim-ms',
      '--cold-boot-ms',
      '--default-ttl',
      '--boot-failure-rate',
      '--claim-failure-rate',
      '--advertise',
      '--log-level',
    ]) {
      expect(stdout).toContain(flag);
    }
    expect(stdout).toContain('SANDBOXD_API_TOKEN');
    expect(stdout).toContain('SANDBOXD_API_TOKEN_FILE');
  });

  it('exits 2 with a message on a bad flag', async () => {
    const { code, stderr } = await run(['--room', 'lots']).exited;
    expect(code).toBe(2);
    expect(stderr).toMatch(/--room/);
  });

  it('serves the API with the token from SANDBOXD_API_TOKEN and exits 0 on SIGTERM', async () => {
    const { child, exited, stderrLines } = run(['--listen', '127.0.0.1:0', '--cold-boot-ms', '5ms'], {
      SANDBOXD_API_TOKEN: 'env-token',
    });
    const address = await servingAddress(stderrLines);
    expect(address).toMatch(/^127\.0\.0\.1:\d+$/);
    const base = `http://${address}`;
    expect(await (await fetch(`${base}/healthz`)).text()).toBe('ok');
    expect((await fetch(`${base}/v1/info`)).status).toBe(401);
    const info = await fetch(`${base}/v1/info`, { headers: { authorization: 'Bearer env-token' } });
    expect(info.status).toBe(200);
    expect(await info.json()).toEqual({ pools: [], claimed: 0 });

    child.kill('SIGTERM');
    const exit = await exited;
    expect(exit.code).toBe(0);
    expect(exit.stderr).toContain('shutdown complete');
  });

  it('serves on a unix socket with --listen unix:/path, and removes the socket on SIGTERM', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandboxd-proc-'));
    const socketPath = join(dir, 'sandboxd.sock');
    try {
      const { child, exited, stderrLines } = run(['--listen', `unix:${socketPath}`, '--api-token', 'root']);
      const address = await servingAddress(stderrLines);
      expect(address).toBe(`unix:${socketPath}`);
      const status = await new Promise<number | undefined>((resolve, reject) => {
        request({ socketPath, path: '/v1/info', headers: { authorization: 'Bearer root' } }, (res) => {
          res.resume();
          resolve(res.statusCode);
        })
          .on('error', reject)
          .end();
      });
      expect(status).toBe(200);
      child.kill('SIGTERM');
      expect((await exited).code).toBe(0);
      expect(existsSync(socketPath)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('exits 2 on a unix socket path that is not absolute', async () => {
    const { code, stderr } = await run(['--listen', 'unix:relative.sock']).exited;
    expect(code).toBe(2);
    expect(stderr).toMatch(/--listen: invalid socket/);
  });
});
