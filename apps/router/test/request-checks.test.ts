// What the router checks before it asks the Kubernetes API anything: the
// X-Sandbox-* headers as upstream's router checks them, the caller's
// credential, and each operation's path and declared body size.
import { MAX_EXECUTE_BODY_BYTES, sandboxPath } from '@warmpool/api';
import { describe, expect, it } from 'vitest';
import { credentialOf, targetOf } from '../src/index.js';
import { declaredTooLarge, operationOf, sandboxRequestPath } from '../src/operation.js';
import { Refusal } from '../src/refusal.js';

const headers =
  (values: Record<string, string>) =>
  (name: string): string | undefined =>
    values[name];

describe('targetOf (X-Sandbox-* headers)', () => {
  it('takes the id, defaults the namespace to default, and reads X-Sandbox-Timeout as the client’s wait', () => {
    expect(targetOf(headers({ 'x-sandbox-id': 'sandbox-claim-1a2b', 'x-sandbox-timeout': '60' }), 8888)).toEqual({
      name: 'sandbox-claim-1a2b',
      namespace: 'default',
      clientTimeoutMs: 60_000,
    });
  });

  it.each([
    [{}, 'InvalidHeader'],
    [{ 'x-sandbox-id': 'Upper' }, 'InvalidHeader'],
    [{ 'x-sandbox-id': 'a.b' }, 'InvalidHeader'],
    [{ 'x-sandbox-id': 'x'.repeat(64) }, 'InvalidHeader'],
    [{ 'x-sandbox-id': 'ok', 'x-sandbox-namespace': '-bad' }, 'InvalidHeader'],
    [{ 'x-sandbox-id': 'ok', 'x-sandbox-port': '0' }, 'InvalidHeader'],
    [{ 'x-sandbox-id': 'ok', 'x-sandbox-port': '8888x' }, 'InvalidHeader'],
    [{ 'x-sandbox-id': 'ok', 'x-sandbox-port': '22' }, 'UnsupportedPort'],
  ])('refuses %j (%s, 400)', (values, reason) => {
    const refused = targetOf(headers(values), 8888);
    expect(refused).toBeInstanceOf(Refusal);
    expect(refused).toMatchObject({ status: 400, body: { reason } });
  });
});

describe('credentialOf (Authorization)', () => {
  it('reads a Bearer token, and the password of Basic (a token in the client’s URL)', () => {
    expect(credentialOf('Bearer abc.def')).toEqual({ kind: 'token', token: 'abc.def' });
    expect(credentialOf(`Basic ${Buffer.from('token:abc.def').toString('base64')}`)).toEqual({
      kind: 'token',
      token: 'abc.def',
    });
    expect(credentialOf(undefined)).toEqual({ kind: 'none' });
  });

  it('calls anything else malformed (401), never tokenless', () => {
    expect(credentialOf('Token abc')).toEqual({ kind: 'malformed' });
    expect(credentialOf(`Basic ${Buffer.from('user-only').toString('base64')}`)).toEqual({ kind: 'malformed' });
    expect(credentialOf(`Basic ${Buffer.from('user:').toString('base64')}`)).toEqual({ kind: 'malformed' });
  });
});

describe('operationOf and the path rules', () => {
  it('decodes the path once and forwards its canonical form under the sandbox’s runtime base', () => {
    const op = operationOf('download', '/download/data%2F.%2Fnotes.txt');
    expect(op).toMatchObject({ name: 'download', path: 'data/notes.txt' });
    if (op instanceof Refusal) throw new Error('refused');
    expect(sandboxRequestPath('sb_1', op)).toBe('/v1/sandboxes/sb_1/runtime/download/data%2Fnotes.txt');
    expect(operationOf('list', '/list/')).toMatchObject({ path: '' });
  });

  it.each(['..%2Fetc%2Fpasswd', 'a%2F..%2F..%2Fb', '%2E%2E%2Fx', 'a%00b', 'a%5Cb', '%E0%A4%A'])(
    'refuses %s (400 InvalidPath)',
    (encoded) => {
      expect(operationOf('exists', `/exists/${encoded}`)).toMatchObject({
        status: 400,
        body: { reason: 'InvalidPath' },
      });
    },
  );

  it('keeps upstream’s meaning of a leading slash: relative to the workspace, never the host root', () => {
    expect(sandboxPath('/etc/passwd')).toEqual({ ok: true, path: 'etc/passwd' });
  });

  it('refuses a declared body over the operation’s cap, and any body on a read (413)', () => {
    const execute = operationOf('execute', '/execute');
    const list = operationOf('list', '/list/');
    if (execute instanceof Refusal || list instanceof Refusal) throw new Error('refused');
    expect(declaredTooLarge(String(MAX_EXECUTE_BODY_BYTES), execute)).toBeUndefined();
    expect(declaredTooLarge(String(MAX_EXECUTE_BODY_BYTES + 1), execute)).toMatchObject({ status: 413 });
    expect(declaredTooLarge('0', list)).toBeUndefined();
    expect(declaredTooLarge('5', list)).toMatchObject({ status: 413 });
  });
});
