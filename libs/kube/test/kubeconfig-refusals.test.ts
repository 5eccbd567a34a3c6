// What loadKubeConfig refuses, and how credential files behave as they rotate,
// without an apiserver: a refusal is a KubeConfigError naming the file and
// never quoting a secret; a rotation caught half done keeps the last good one.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueCertificate, processGroupMembers } from '@warmpool/harness';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { KubeConfigError, loadKubeConfig } from '../src/index.js';
import { ClientCertificate } from '../src/kubeconfig/client-certificate.js';
import { ExecPlugin, type ExecConfig } from '../src/kubeconfig/exec-plugin.js';
import { inCluster } from '../src/kubeconfig/in-cluster.js';
import { pemFile, RefreshedFile } from '../src/kubeconfig/refreshed-file.js';

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
  it('a file that is not YAML, saying where and never what (YAML errors quote lines, tags and aliases)', () => {
    const write = (name: string, text: string): string => {
      writeFileSync(join(dir, name), text);
      return join(dir, name);
    };
    const cases = [
      `users:\n- name: u\n  user:\n    token: ${SECRET}\n  bad: [\n`,
      `users:\n- name: u\n  user:\n    password: !${SECRET}\n`,
      `users:\n- name: u\n  user:\n    password: *${SECRET}\n`,
    ];
    for (const [i, text] of cases.entries())
      expect(refusal(write(`not-yaml-${i}`, text)).message).toMatch(
        /not valid YAML: an error at line \d+, column \d+$/,
      );
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
    const proxied = { ...https_, 'proxy-url': 'http://127.0.0.1:3128' };
    expect(refusal(kubeconfig('half-pair-proxied', proxied, { 'client-key': '/x.key' })).message).toMatch(/its key/);
    const withPassword = { server: `https://admin:${SECRET}@127.0.0.1:6443` };
    expect(refusal(kubeconfig('userinfo', withPassword, {})).message).toMatch(/credentials in its URL/);
    const exec = { apiVersion: 'client.authentication.k8s.io/v1', command: 'plugin' };
    expect(refusal(kubeconfig('token-and-exec', https_, { token: SECRET, exec })).message).toMatch(/exec plugin/);
    expect(refusal(kubeconfig('exec-no-version', https_, { exec: { command: 'plugin' } })).message).toMatch(
      /apiVersion/,
    );
    expect(
      refusal(kubeconfig('exec-terminal', https_, { exec: { ...exec, interactiveMode: 'Always' } })).message,
    ).toMatch(/needs a terminal/);
    const provider = { name: 'gcp', config: { 'cmd-path': '/usr/bin/gcloud' } };
    expect(refusal(kubeconfig('exec-and-provider', https_, { exec, 'auth-provider': provider })).message).toMatch(
      /exec plugin and an auth provider/,
    );
    expect(refusal(kubeconfig('provider-command', https_, { 'auth-provider': provider })).message).toMatch(/cmd-path/);
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

describe('an exec plugin', () => {
  const exec = (script: string): ExecConfig => {
    const path = join(dir, `plugin-${Math.random().toString(36).slice(2)}.mjs`);
    writeFileSync(path, script);
    return { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: [path] };
  };

  it('is killed, with what it started, and named when it does not answer in time', async () => {
    const pids = join(dir, 'hung.pids');
    const plugin = new ExecPlugin(
      exec(`import { spawn } from 'node:child_process'; import { writeFileSync } from 'node:fs';
        const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
        writeFileSync(${JSON.stringify(pids)}, JSON.stringify([process.pid, child.pid]));
        setTimeout(() => {}, 60_000);`),
      undefined,
      { timeoutMs: 1_000 },
    );
    await expect(plugin.credential()).rejects.toThrow(/did not answer within 1000 ms/);
    const [pluginPid, child] = JSON.parse(readFileSync(pids, 'utf8')) as number[];
    expect(child).toBeGreaterThan(0);
    // The plugin leads its own process group; nothing of it is left (a zombie awaiting init is not alive).
    await vi.waitFor(() => expect(processGroupMembers(pluginPid ?? 0)).toEqual([]));
  });

  it('answers once it exited, even when a child it left behind holds its output open; the child goes', async () => {
    const pidFile = join(dir, 'leaving.pid');
    const plugin = new ExecPlugin(
      exec(`import { spawn } from 'node:child_process'; import { writeFileSync } from 'node:fs';
        writeFileSync(${JSON.stringify(pidFile)}, String(process.pid));
        spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: ['ignore', 'inherit', 'ignore'] }).unref();
        process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: 't' } }));`),
      undefined,
      { timeoutMs: 2_500 },
    );
    expect((await plugin.credential()).token).toBe('t');
    const pluginPid = Number(readFileSync(pidFile, 'utf8'));
    await vi.waitFor(() => expect(processGroupMembers(pluginPid)).toEqual([]));
  });

  it('refuses an answer in another apiVersion, or with an expiry that is not RFC 3339', async () => {
    const answer = (apiVersion: string, expirationTimestamp?: string): string =>
      `process.stdout.write(JSON.stringify({ apiVersion: ${JSON.stringify(apiVersion)}, kind: 'ExecCredential', status: { token: 't', ${expirationTimestamp === undefined ? '' : `expirationTimestamp: ${JSON.stringify(expirationTimestamp)}`} } }));`;
    await expect(new ExecPlugin(exec(answer('client.authentication.k8s.io/v1beta1'))).credential()).rejects.toThrow(
      /answered in client.authentication.k8s.io\/v1beta1/,
    );
    await expect(new ExecPlugin(exec(answer('client.authentication.k8s.io/v1', '1'))).credential()).rejects.toThrow(
      /not an RFC 3339 time/,
    );
  });

  it('names an env or args it cannot pass without quoting them', async () => {
    const config = { ...exec(''), env: [{ name: 'SECRET', value: `${SECRET}\u0000` }] };
    const error = await new ExecPlugin(config).credential().then(
      () => undefined,
      (thrown: unknown) => thrown as Error,
    );
    expect(error?.message).toMatch(/could not be started/);
    expect(error?.message).not.toContain(SECRET);
  });

  it('never repeats what it printed when that is not an ExecCredential (it may be the token itself)', async () => {
    const plugin = new ExecPlugin(exec(`process.stdout.write(${JSON.stringify(SECRET)});`));
    const error = await plugin.credential().then(
      () => undefined,
      (thrown: unknown) => thrown as Error,
    );
    expect(error?.message).toMatch(/not an ExecCredential/);
    expect(error?.message).not.toContain(SECRET);
    expect(error?.cause).toBeUndefined();
  });

  it('is run again once its credential expired or was refused (invalidate), and not before', async () => {
    const runs = join(dir, 'expiring-runs');
    writeFileSync(runs, '');
    const credential = (expiresInMs: number): string =>
      `import { appendFileSync } from 'node:fs'; appendFileSync(${JSON.stringify(runs)}, 'x');
       process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: 't', expirationTimestamp: new Date(Date.now() + ${expiresInMs}).toISOString() } }));`;
    const expired = new ExecPlugin(exec(credential(-1000)));
    await expired.credential();
    await expired.credential();
    expect(readFileSync(runs, 'utf8')).toBe('xx');
    const fresh = new ExecPlugin(exec(credential(3_600_000)));
    await fresh.credential();
    await fresh.credential();
    expect(readFileSync(runs, 'utf8')).toBe('xxx');
    const refused = await fresh.credential();
    fresh.invalidate(refused);
    const replacement = await fresh.credential();
    expect(readFileSync(runs, 'utf8')).toBe('xxxx');
    fresh.invalidate(refused); // a late 401 for the credential already replaced
    expect(await fresh.credential()).toBe(replacement);
    expect(readFileSync(runs, 'utf8')).toBe('xxxx');
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

  it('keeps the last good PEM while a CA file is caught empty or mid-write', () => {
    const path = join(dir, 'ca.pem');
    writeFileSync(path, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
    let now = 0;
    const pem = pemFile(path, { refreshMs: 1, now: () => now });
    expect(pem.read().toString()).toContain('AAAA');
    writeFileSync(path, '-----BEGIN CERTIFICATE-----\nBB');
    now = 1;
    expect(pem.read().toString()).toContain('AAAA');
    writeFileSync(path, '');
    now = 2;
    expect(pem.read().toString()).toContain('AAAA');
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
