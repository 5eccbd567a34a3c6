// The root token from a file (a mounted Secret), re-read when it changes: the
// replaced token stays root for the grace period, and an emptied file never
// opens the node.
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '@warmpool/harness';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeSandboxd, type RunningFakeSandboxd } from '../src/index.js';
import { SandboxdClient } from './http-client.js';

const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tokenFile(content: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'sandboxd-token-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'token');
  writeFileSync(file, content);
  return file;
}

function replace(file: string, content: string): void {
  writeFileSync(`${file}.new`, content);
  renameSync(`${file}.new`, file);
}

async function start(file: string, tokenGraceMs: number): Promise<RunningFakeSandboxd> {
  const node = await startFakeSandboxd({ apiTokenFile: file, tokenReloadIntervalMs: 20, tokenGraceMs, coldBootMs: 5 });
  cleanups.push(() => node.close());
  return node;
}

const status = async (node: RunningFakeSandboxd, token: string | null): Promise<number> =>
  (await new SandboxdClient(node.url, token).get('/v1/info')).status;

describe('fake-sandboxd --api-token-file', () => {
  it('takes the token from the file, and nobody else is root', async () => {
    const node = await start(tokenFile('from-file\n'), 60_000);
    expect(await status(node, 'from-file')).toBe(200);
    expect(await status(node, 'other')).toBe(401);
    expect(await status(node, null)).toBe(401);
  });

  it('takes a rotated token without a restart, and the replaced one for the grace only', async () => {
    const file = tokenFile('first');
    const node = await start(file, 1_500);
    replace(file, 'second');
    await eventually(async () => (await status(node, 'second')) === 200, { timeoutMs: 5_000 });
    expect(await status(node, 'first')).toBe(200);
    await eventually(async () => (await status(node, 'first')) === 401, { timeoutMs: 5_000 });
    expect(await status(node, 'second')).toBe(200);
  });

  it('keeps the last token when the file is emptied, rather than accept everyone', async () => {
    const file = tokenFile('kept');
    const node = await start(file, 0);
    replace(file, '');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await status(node, null)).toBe(401);
    expect(await status(node, 'kept')).toBe(200);
  });

  it('refuses to start on an empty or unreadable file', async () => {
    await expect(startFakeSandboxd({ apiTokenFile: tokenFile('  \n') })).rejects.toThrow(
      /--api-token-file: .* is empty/,
    );
    await expect(startFakeSandboxd({ apiTokenFile: '/nonexistent/token' })).rejects.toThrow(
      /--api-token-file: cannot read/,
    );
  });
});
