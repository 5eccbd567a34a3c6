// What loadKubeConfig refuses, and how credential files behave as they rotate,
// without an apiserver: a refusal is a KubeConfigError naming the file and
// never quoting a secret; a rotation caught half done keeps the last good one.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueCertificate } from '@warmpool/harness';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { KubeConfigError, loadKubeConfig } from '../src/index.js';
import { ClientCertificate } from '../src/kubeconfig/client-certificate.js';
import { inCluster } from '../src/kubeconfig/in-cluster.js';
import { RefreshedFile } from '../src/kubeconfig/refreshed-file.js';

const SECRET = 'SUPERSECRETTOKEN123';
const dir = mkdtempSync(join(tmpdir(), 'warmpool-kubeconfig-refusals-'));
const savedEnv = { ...process.env };

afterEach(() => {
  for (const key of Object.keys(process.env)) if (!(key in savedEnv)) delete process.env[key];
  Object.assign(process.env, savedEnv);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A kubeconfig with one context, `ctx`, for `cluster` and `user`. */
function kubeconfig(name: string, cluster: object, user: object | undefined = {}): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    JSON.stringify({
      'current-context': 'ctx',
      clusters: [{ name: 'c', cluster }],
      users: [{ name: 'u', user }],
      contexts: [{ name: 'ctx', context: { cluster: 'c', ...(user === undefined ? {} : { user: 'u' }) } }],
    }),
  );
  return path;
}

function refusal(path: string): KubeConfigError {
  try {
    loadKubeConfig(path);
  } catch (error) {
    expect(error).toBeInstanceOf(KubeConfigError);
    expect((error as Error).message).toContain(path);
    expect((error as Error).message).not.toContain(SECRET);
    expect((error as Error).cause).toBeUndefined();
    return error as KubeConfigError;
  }
  throw new Error(`${path} was accepted`);
}

async function headersOf(path: string): Promise<https.RequestOptions> {
  const options: https.RequestOptions = {};
  await loadKubeConfig(path).applyToHTTPSOptions(options);
  return options;
}

const https_ = { server: 'https://127.0.0.1:6443' };

describe('loadKubeConfig refuses', () => {
  it('a file that is not YAML, without quoting the lines around the error (they may hold a token)', () => {
    const path = join(dir, 'not-yaml');
    writeFileSync(path, `users:\n- name: u\n  user:\n    token: ${SECRET}\n  bad: [\n`);
    expect(refusal(path).message).toMatch(/not valid YAML: .* at line \d+, column \d+/);
  });

  it('a file without a usable current context, cluster or server', () => {
    const write = (name: string, content: object): string => {
      writeFileSync(join(dir, name), JSON.stringify(content));
      return join(dir, name);
    };
    expect(refusal(write('no-context', { clusters: [] })).message).toMatch(/no current-context/);
    expect(refusal(write('unknown-context', { 'current-context': 'x' })).message).toMatch(/no context named x/);
    expect(refusal(kubeconfig('bad-server', { server: 7 })).message).toMatch(/server/);
    expect(() => loadKubeConfig(join(dir, 'absent.yaml'))).toThrow(KubeConfigError);
  });

  it('credentials that contradict each other or would travel in the clear', () => {
    expect(refusal(kubeconfig('two', https_, { token: SECRET, username: 'bob', password: 'pw' })).message).toMatch(
      /username and a bearer token/,
    );
    const ca = { 'certificate-authority-data': Buffer.from('pem').toString('base64') };
    expect(refusal(kubeconfig('ca-insecure', { ...https_, ...ca, 'insecure-skip-tls-verify': true })).message).toMatch(
      /insecure-skip-tls-verify/,
    );
    const plain = { server: 'http://127.0.0.1:8080' };
    for (const [name, user] of [
      ['http-token', { token: SECRET }],
      ['http-basic', { username: 'bob', password: SECRET }],
      ['http-exec', { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'x' } }],
    ] as const)
      expect(refusal(kubeconfig(name, plain, user)).message).toMatch(/not https/);
    expect(refusal(kubeconfig('half-pair', https_, { 'client-certificate': '/x.crt' })).message).toMatch(/its key/);
    expect(
      refusal(kubeconfig('bad-base64', { ...https_, 'certificate-authority-data': '-----BEGIN' })).message,
    ).toMatch(/certificate-authority-data is not base64/);
  });
});

describe('loadKubeConfig accepts', () => {
  it('a plain http server without credentials (kubectl proxy), and a context without a user (anonymous)', async () => {
    expect((await headersOf(kubeconfig('proxy', { server: 'http://127.0.0.1:8001' }))).headers).toEqual({});
    expect((await headersOf(kubeconfig('anonymous', https_, undefined))).headers).toEqual({});
  });

  it('a token file over an inline token (the file rotates)', async () => {
    writeFileSync(join(dir, 'wins.token'), 'from-file\n');
    const path = kubeconfig('token-and-file', https_, { token: 'inline', tokenFile: 'wins.token' });
    expect((await headersOf(path)).headers).toEqual({ Authorization: 'Bearer from-file' });
  });

  it("$KUBECONFIG's files that exist, skipping those that do not; none existing is an error", async () => {
    const present = kubeconfig('present', https_, { token: 't' });
    process.env['KUBECONFIG'] = `${join(dir, 'missing-1')}:${present}`;
    const options: https.RequestOptions = {};
    await loadKubeConfig().applyToHTTPSOptions(options);
    expect(options.headers).toEqual({ Authorization: 'Bearer t' });
    process.env['KUBECONFIG'] = join(dir, 'missing-2');
    expect(() => loadKubeConfig()).toThrow(/no file of KUBECONFIG exists/);
  });

  it('no pod identity from an empty KUBERNETES_SERVICE_HOST', () => {
    writeFileSync(join(dir, 'token'), 't');
    process.env['KUBERNETES_SERVICE_HOST'] = '';
    expect(inCluster(dir)).toBe(false);
    process.env['KUBERNETES_SERVICE_HOST'] = '10.96.0.1';
    expect(inCluster(dir)).toBe(true);
  });
});

describe('a credential file (a projected token, a mounted certificate)', () => {
  it('is read again once older than the refresh interval, and not before', () => {
    const path = join(dir, 'rotating');
    writeFileSync(path, 'first');
    let now = 0;
    const file = new RefreshedFile(path, { refreshMs: 60_000, now: () => now });
    expect(file.read().toString()).toBe('first');
    writeFileSync(path, 'rotated');
    now = 59_999;
    expect(file.read().toString()).toBe('first');
    now = 60_000;
    expect(file.read().toString()).toBe('rotated');
  });

  it('keeps its last good content while the file is gone or refused, and fails only if it never read well', () => {
    const path = join(dir, 'flaky');
    let now = 0;
    const refuse = (content: Buffer): string | undefined => (content.length === 0 ? 'empty' : undefined);
    const file = new RefreshedFile(path, { refreshMs: 1, now: () => now, refuse });
    expect(() => file.read()).toThrow(KubeConfigError);
    writeFileSync(path, 'good');
    now = 1;
    expect(file.read().toString()).toBe('good');
    writeFileSync(path, '');
    now = 2;
    expect(file.read().toString()).toBe('good');
    rmSync(path);
    now = 3;
    expect(file.read().toString()).toBe('good');
  });

  it('pairs a certificate with its key: a pair caught between two writes is not used, the last matching one is', () => {
    const ca = issueCertificate({ subject: { commonName: 'ca' }, isCa: true });
    const [one, two] = ['one', 'two'].map((commonName) =>
      issueCertificate({ subject: { commonName }, issuer: ca, usages: ['client'] }),
    );
    if (!one || !two) throw new Error('no certificates');
    const certPath = join(dir, 'client.crt');
    const keyPath = join(dir, 'client.key');
    writeFileSync(certPath, two.certPem);
    writeFileSync(keyPath, one.keyPem);
    let now = 0;
    const file = (path: string): { file: RefreshedFile } => ({
      file: new RefreshedFile(path, { refreshMs: 1, now: () => now }),
    });
    const pair = new ClientCertificate(file(certPath), file(keyPath));
    expect(() => pair.current()).toThrow(/cannot be used together/);
    writeFileSync(certPath, one.certPem);
    now = 1;
    expect(pair.current().cert.toString()).toBe(one.certPem);
    writeFileSync(certPath, two.certPem); // the certificate renewed, its key not yet
    now = 2;
    expect(pair.current().cert.toString()).toBe(one.certPem);
    writeFileSync(keyPath, two.keyPem);
    now = 3;
    expect(pair.current().cert.toString()).toBe(two.certPem);
  });
});
