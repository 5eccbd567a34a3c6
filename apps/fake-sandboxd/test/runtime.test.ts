// The sandbox runtime contract (docs/sandbox-runtime.md) as fake-sandboxd
// simulates it, over real HTTP on loopback: upstream's five operations per
// sandbox, its own token only, the path rules and the limits.
import {
  claimGrantSchema,
  executeResponseSchema,
  existsResponseSchema,
  fileListSchema,
  MAX_COMMAND_OUTPUT_BYTES,
  MAX_FILE_BYTES,
  runtimeBasePath,
  runtimeErrorSchema,
} from '@warmpool/api';
import { postDeclaringOnly } from '@warmpool/harness';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startFakeSandboxd, type RunningFakeSandboxd } from '../src/index.js';

const ROOT = 'root-secret';
const KEY = { template: 'base:24.04', net: 'none', size: 'small' } as const;

let node: RunningFakeSandboxd;

interface Sandbox {
  id: string;
  token: string;
  base: string;
}

async function claim(): Promise<Sandbox> {
  const res = await fetch(`${node.url}/v1/claim`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ROOT}`, 'content-type': 'application/json' },
    body: JSON.stringify({ template: KEY.template }),
  });
  const grant = claimGrantSchema.parse(await res.json());
  return { id: grant.id, token: grant.token, base: `${node.url}${runtimeBasePath(grant.id)}` };
}

function call(sb: Sandbox, path: string, init: RequestInit = {}, token: string | null = sb.token): Promise<Response> {
  const headers = new Headers(init.headers);
  if (token !== null) headers.set('authorization', `Bearer ${token}`);
  return fetch(`${sb.base}${path}`, { ...init, headers });
}

function execute(sb: Sandbox, command: string): Promise<Response> {
  return call(sb, '/execute', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ command }),
  });
}

async function ran(sb: Sandbox, command: string): Promise<{ stdout: string; stderr: string; exit_code: number }> {
  const res = await execute(sb, command);
  expect(res.status).toBe(200);
  return executeResponseSchema.parse(await res.json());
}

/** As upstream's Python client uploads: multipart, field `file`, the destination path as its filename. */
function upload(sb: Sandbox, path: string, content: string | Uint8Array): Promise<Response> {
  const form = new FormData();
  form.append('file', new Blob([content]), path);
  return call(sb, '/upload', { method: 'POST', body: form });
}

async function refusal(res: Response, status: number, reason: string): Promise<void> {
  expect(res.status).toBe(status);
  expect(runtimeErrorSchema.parse(await res.json()).reason).toBe(reason);
}

beforeEach(async () => {
  node = await startFakeSandboxd({ apiToken: ROOT, coldBootMs: 1, runtime: { execTimeoutMs: 200 } });
});

afterEach(async () => {
  await node.close();
});

describe('fake-sandboxd sandbox runtime', () => {
  it('runs the simulated commands in the sandbox workspace, never a host process', async () => {
    const sb = await claim();
    expect(await ran(sb, 'echo hello "big world"')).toEqual({ stdout: 'hello big world\n', stderr: '', exit_code: 0 });
    expect((await ran(sb, 'pwd')).stdout).toBe('/app\n');
    expect(await upload(sb, 'notes/a.txt', 'alpha\n')).toHaveProperty('status', 200);
    expect((await ran(sb, 'ls')).stdout).toBe('notes\n');
    expect((await ran(sb, 'cat notes/a.txt /app/notes/a.txt')).stdout).toBe('alpha\nalpha\n');
    expect(await ran(sb, 'cat /etc/passwd')).toMatchObject({
      exit_code: 1,
      stderr: 'cat: /etc/passwd: No such file or directory\n',
    });
    expect(await ran(sb, 'uname -a')).toMatchObject({ exit_code: 1, stdout: '' });
    expect((await ran(sb, 'uname -a')).stderr).toContain("No such file or directory: 'uname'");
    expect((await ran(sb, 'echo "unbalanced')).stderr).toBe('Failed to execute command: No closing quotation');
  });

  it('stops a command at the exec timeout and answers exit 1 with the reason, as upstream runtime does', async () => {
    const sb = await claim();
    const result = await ran(sb, 'sleep 5');
    expect(result.exit_code).toBe(1);
    expect(result.stderr).toContain('timed out after 0.2 seconds');
  });

  it('refuses an empty command (400)', async () => {
    const sb = await claim();
    await refusal(await execute(sb, '   '), 400, 'InvalidBody');
    await refusal(await call(sb, '/execute', { method: 'POST', body: '{"cmd":1}' }), 400, 'InvalidBody');
  });

  it('round-trips a file: upload, exists, list, download', async () => {
    const sb = await claim();
    const bytes = new Uint8Array([0, 1, 2, 250, 255]);
    expect((await upload(sb, 'data/bin/blob.dat', bytes)).status).toBe(200);
    const downloaded = await call(sb, `/download/${encodeURIComponent('data/bin/blob.dat')}`);
    expect(downloaded.status).toBe(200);
    expect(new Uint8Array(await downloaded.arrayBuffer())).toEqual(bytes);
    const exists = existsResponseSchema.parse(await (await call(sb, '/exists/data%2Fbin%2Fblob.dat')).json());
    expect(exists).toEqual({ path: 'data/bin/blob.dat', exists: true });
    expect(existsResponseSchema.parse(await (await call(sb, '/exists/nope')).json()).exists).toBe(false);
    const listed = fileListSchema.parse(await (await call(sb, '/list/data%2Fbin')).json());
    expect(listed).toEqual([{ name: 'blob.dat', size: 5, type: 'file', mod_time: expect.any(Number) }]);
    const root = fileListSchema.parse(await (await call(sb, '/list/')).json());
    expect(root.map((e) => [e.name, e.type])).toEqual([['data', 'directory']]);
    await refusal(await call(sb, '/download/data'), 404, 'NotFound');
    await refusal(await call(sb, '/list/nope'), 404, 'NotFound');
  });

  it('refuses every path that escapes the workspace (400), reading and writing nothing', async () => {
    const sb = await claim();
    for (const op of ['download', 'list', 'exists'])
      for (const path of ['..%2Fetc%2Fpasswd', 'a%2F..%2F..%2Fx', 'a%00b'])
        await refusal(await call(sb, `/${op}/${path}`), 400, 'InvalidPath');
    await refusal(await upload(sb, '../escape.txt', 'x'), 400, 'InvalidPath');
    expect(fileListSchema.parse(await (await call(sb, '/list/')).json())).toEqual([]);
  });

  it('takes only the sandbox’s own token: none is 401, the root or another sandbox’s is 404', async () => {
    const [a, b] = [await claim(), await claim()];
    await refusal(await execute({ ...a, token: '' }, 'echo'), 401, 'Unauthenticated');
    await refusal(await call(a, '/list/', {}, null), 401, 'Unauthenticated');
    await refusal(await call(a, '/list/', {}, b.token), 404, 'SandboxNotFound');
    await refusal(await call(a, '/list/', {}, ROOT), 404, 'SandboxNotFound');
  });

  it('forgets a released sandbox’s files: its id answers 404', async () => {
    const sb = await claim();
    await upload(sb, 'kept.txt', 'x');
    const released = await fetch(`${node.url}/v1/sandboxes/${sb.id}/release`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sb.token}` },
    });
    expect(released.status).toBe(204);
    await refusal(await call(sb, '/exists/kept.txt'), 404, 'SandboxNotFound');
  });

  it('refuses a file over 256 MiB by its Content-Length, before reading it (413)', async () => {
    const sb = await claim();
    const answer = await postDeclaringOnly(
      `${sb.base}/upload`,
      {
        authorization: `Bearer ${sb.token}`,
        'content-type': 'multipart/form-data; boundary=x',
        'content-length': String(MAX_FILE_BYTES * 2),
      },
      '--x\r\n',
    );
    expect(answer.status).toBe(413);
    expect(runtimeErrorSchema.parse(JSON.parse(answer.body)).reason).toBe('PayloadTooLarge');
  });

  it('refuses command output over 16 MiB (413)', async () => {
    const sb = await claim();
    expect((await upload(sb, 'big', new Uint8Array(MAX_COMMAND_OUTPUT_BYTES / 2 + 1).fill(97))).status).toBe(200);
    await refusal(await execute(sb, 'cat big big'), 413, 'OutputTooLarge');
    expect((await ran(sb, 'echo small')).stdout).toBe('small\n');
  });

  it('counts every request that reached the runtime routes, refused ones too (for specs proving nothing came)', async () => {
    const sb = await claim();
    await execute(sb, 'true');
    await call(sb, '/list/..%2F');
    expect(Object.fromEntries(node.runtimes?.served ?? [])).toEqual({ execute: 1, list: 1 });
    const metrics = await (await fetch(`${node.url}/metrics`, { headers: { authorization: `Bearer ${ROOT}` } })).text();
    expect(metrics).toContain('sandboxd_runtime_requests_total{operation="execute"} 1');
  });
});
