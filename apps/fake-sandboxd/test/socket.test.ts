// fake-sandboxd on a unix socket, as the real sandboxd is reached on a node.
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManagedChild } from '@warmpool/harness';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeSandboxd } from '../src/index.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function socketDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sandboxd-sock-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** GET over a unix socket. */
function getOverSocket(socketPath: string, path: string, token: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, headers: { authorization: `Bearer ${token}` } }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('fake-sandboxd on a unix socket', () => {
  it('serves the API there, names it as a unix: URL, and removes the socket file on close', async () => {
    const socketPath = join(socketDir(), 'sandboxd.sock');
    const node = await startFakeSandboxd({ socketPath, apiToken: 'root' });
    expect(node.url).toBe(`unix:${socketPath}`);
    expect(statSync(socketPath).isSocket()).toBe(true);
    expect(await getOverSocket(socketPath, '/v1/info', 'root')).toEqual({
      status: 200,
      body: '{"pools":[],"claimed":0,"hibernated":0,"archived":0}',
    });
    await node.close();
    expect(existsSync(socketPath)).toBe(false);
  });

  it('replaces a socket file left behind by a process that died', async () => {
    const dir = socketDir();
    const socketPath = join(dir, 'sandboxd.sock');
    // A process that listens there and is then killed outright leaves the file with nobody behind it.
    const listener = new ManagedChild({
      name: 'listener',
      command: process.execPath,
      args: ['-e', 'require("node:net").createServer().listen(process.argv[1], () => console.log("up"))', socketPath],
      logFile: join(dir, 'listener.log'),
      orphanCleanupDir: dir,
    });
    cleanups.push(async () => {
      await listener.stop('SIGKILL');
    });
    await listener.logged((line) => (line === 'up' ? line : undefined), { what: 'the listener to listen' });
    await listener.stop('SIGKILL');
    expect(statSync(socketPath).isSocket()).toBe(true);

    const node = await startFakeSandboxd({ socketPath });
    cleanups.push(() => node.close());
    expect((await getOverSocket(socketPath, '/healthz', '')).body).toBe('ok');
  });

  it('refuses to take over a socket another server is listening on, or a file that is not a socket', async () => {
    const dir = socketDir();
    const socketPath = join(dir, 'sandboxd.sock');
    const live = await startFakeSandboxd({ socketPath });
    cleanups.push(() => live.close());
    await expect(startFakeSandboxd({ socketPath })).rejects.toThrow(/another server is listening/);
    const plain = join(dir, 'not-a-socket');
    writeFileSync(plain, 'keep me');
    await expect(startFakeSandboxd({ socketPath: plain })).rejects.toThrow(/not a socket/);
    expect(statSync(plain).isFile()).toBe(true);
  });
});
