// loadKubeConfig against a real apiserver: every kind of credential a
// kubeconfig or a pod carries authenticates as the identity it names, and
// client-node (≈ 86 MiB of RSS) is loaded only for what only it implements.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { issueCertificate, startCluster, type TestCluster } from '@warmpool/harness';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { KubeConfigError, KubeTransport, loadKubeConfig, type KubeConfig } from '../src/index.js';
import { inClusterKubeConfig } from '../src/kubeconfig/in-cluster.js';

const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');

interface UserInfo {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** The username the apiserver authenticates a request from `kubeConfig` as (a SelfSubjectReview). */
async function whoAmI(kubeConfig: KubeConfig): Promise<string> {
  return (await userInfo(kubeConfig)).username;
}

/** Who the apiserver authenticates a request from `kubeConfig` as. */
async function userInfo(kubeConfig: KubeConfig): Promise<UserInfo> {
  const transport = new KubeTransport(kubeConfig);
  try {
    const review = await transport.request<{ status: { userInfo: UserInfo } }>({
      method: 'POST',
      path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    return review.status.userInfo;
  } finally {
    transport.close();
  }
}

describe('loadKubeConfig', () => {
  let cluster: TestCluster;
  let dir: string;
  let token: string;
  const savedEnv = { ...process.env };

  /** A kubeconfig file in `dir` with one context, `ctx`, for the cluster and the given user. */
  const kubeconfig = (name: string, user: object, cluster_: object = {}, extra: object = {}): string => {
    const path = join(dir, name);
    const file = {
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'ctx',
      clusters: [
        {
          name: 'c',
          cluster: { server: cluster.server, 'certificate-authority-data': b64(cluster.pki.ca.certPem), ...cluster_ },
        },
      ],
      users: [{ name: 'u', user }],
      contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u' } }],
      ...extra,
    };
    writeFileSync(path, JSON.stringify(file), { mode: 0o600 });
    return path;
  };

  beforeAll(async () => {
    cluster = await startCluster({ name: 'kubeconfig' });
    dir = mkdtempSync(join(tmpdir(), 'warmpool-kubeconfig-'));
    await cluster.kubectl(['create', 'serviceaccount', 'reader', '-n', 'default']);
    token = (await cluster.kubectl(['create', 'token', 'reader', '-n', 'default'])).stdout.trim();
  });

  afterEach(() => {
    for (const key of Object.keys(process.env)) if (!(key in savedEnv)) delete process.env[key];
    Object.assign(process.env, savedEnv);
  });

  afterAll(async () => {
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('authenticates with the client certificate and key embedded in the file', async () => {
    expect(await whoAmI(loadKubeConfig(cluster.kubeconfigPath))).toBe('admin');
  });

  it('reads certificate, key and CA from files named relative to the kubeconfig', async () => {
    const alice = issueCertificate({ subject: { commonName: 'alice' }, issuer: cluster.pki.ca, usages: ['client'] });
    writeFileSync(join(dir, 'alice.crt'), alice.certPem);
    writeFileSync(join(dir, 'alice.key'), alice.keyPem);
    writeFileSync(join(dir, 'ca.crt'), cluster.pki.ca.certPem);
    const path = kubeconfig(
      'files.yaml',
      { 'client-certificate': 'alice.crt', 'client-key': './alice.key' },
      { 'certificate-authority-data': undefined, 'certificate-authority': 'ca.crt' },
    );
    expect(await whoAmI(loadKubeConfig(path))).toBe('alice');
  });

  it('sends a bearer token given inline, or read from tokenFile with its newline trimmed', async () => {
    expect(await whoAmI(loadKubeConfig(kubeconfig('token.yaml', { token })))).toBe(
      'system:serviceaccount:default:reader',
    );
    writeFileSync(join(dir, 'reader.token'), `${token}\n`);
    expect(await whoAmI(loadKubeConfig(kubeconfig('token-file.yaml', { tokenFile: 'reader.token' })))).toBe(
      'system:serviceaccount:default:reader',
    );
  });

  it("verifies the apiserver's certificate against tls-server-name, and trusts it blindly only when told to", async () => {
    const named = (tlsServerName: string): string =>
      kubeconfig(`tls-${tlsServerName}.yaml`, { token }, { 'tls-server-name': tlsServerName });
    expect(await whoAmI(loadKubeConfig(named('kubernetes.default.svc')))).toBe('system:serviceaccount:default:reader');
    await expect(whoAmI(loadKubeConfig(named('not-the-apiserver')))).rejects.toThrow(/not-the-apiserver/);
    const untrusted = kubeconfig('skip.yaml', { token }, { 'certificate-authority-data': undefined });
    await expect(whoAmI(loadKubeConfig(untrusted))).rejects.toThrow(/certificate/);
    const skipping = kubeconfig(
      'skip-on.yaml',
      { token },
      { 'certificate-authority-data': undefined, 'insecure-skip-tls-verify': true },
    );
    expect(await whoAmI(loadKubeConfig(skipping))).toBe('system:serviceaccount:default:reader');
  });

  it("runs an exec credential plugin (client-go's protocol) for a token", async () => {
    const plugin = join(dir, 'plugin.mjs');
    writeFileSync(
      plugin,
      `process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: ${JSON.stringify(token)} } }));`,
    );
    const path = kubeconfig('exec.yaml', {
      exec: {
        apiVersion: 'client.authentication.k8s.io/v1',
        command: process.execPath,
        args: [plugin],
        interactiveMode: 'Never',
      },
    });
    expect(await whoAmI(loadKubeConfig(path))).toBe('system:serviceaccount:default:reader');
  });

  it('runs an exec plugin for a client certificate, named relative to the kubeconfig, told the cluster when it asks', async () => {
    const dave = issueCertificate({ subject: { commonName: 'dave' }, issuer: cluster.pki.ca, usages: ['client'] });
    const infoFile = join(dir, 'exec-info.json');
    const script = join(dir, 'cert-plugin.mjs');
    writeFileSync(
      script,
      `import { writeFileSync } from 'node:fs';
       writeFileSync(${JSON.stringify(infoFile)}, process.env.KUBERNETES_EXEC_INFO ?? '');
       process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential',
         status: { clientCertificateData: ${JSON.stringify(dave.certPem)}, clientKeyData: ${JSON.stringify(dave.keyPem)} } }));`,
    );
    writeFileSync(
      join(dir, 'cert-plugin.sh'),
      `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(script)}\n`,
      {
        mode: 0o755,
      },
    );
    const path = kubeconfig('exec-cert.yaml', {
      exec: {
        apiVersion: 'client.authentication.k8s.io/v1',
        command: './cert-plugin.sh',
        provideClusterInfo: true,
        interactiveMode: 'Never',
      },
    });
    expect(await whoAmI(loadKubeConfig(path))).toBe('dave');
    expect(JSON.parse(readFileSync(infoFile, 'utf8'))).toMatchObject({
      kind: 'ExecCredential',
      spec: { interactive: false, cluster: { server: cluster.server } },
    });
  });

  it('runs an exec plugin again when the apiserver refuses its credential (401), as client-go does', async () => {
    const runs = join(dir, 'refused-runs');
    writeFileSync(runs, '');
    const plugin = join(dir, 'refused-plugin.mjs');
    writeFileSync(
      plugin,
      `import { appendFileSync, readFileSync } from 'node:fs';
       const first = readFileSync(${JSON.stringify(runs)}, 'utf8') === '';
       appendFileSync(${JSON.stringify(runs)}, 'x');
       process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: first ? 'revoked' : ${JSON.stringify(token)} } }));`,
    );
    const kubeConfig = loadKubeConfig(
      kubeconfig('refused.yaml', {
        exec: { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: [plugin] },
      }),
    );
    await expect(whoAmI(kubeConfig)).rejects.toMatchObject({ statusCode: 401 });
    expect(await whoAmI(kubeConfig)).toBe('system:serviceaccount:default:reader');
    expect(readFileSync(runs, 'utf8')).toBe('xx');
  });

  it("merges $KUBECONFIG's files: the first to set current-context, and the first to name an entry, win", async () => {
    const first = join(dir, 'first.yaml');
    writeFileSync(first, JSON.stringify({ 'current-context': 'ctx', users: [{ name: 'u', user: { token } }] }));
    const second = kubeconfig('second.yaml', { token: 'not-this-one' }, {}, { 'current-context': 'elsewhere' });
    process.env['KUBECONFIG'] = `${first}::${second}`;
    expect(await whoAmI(loadKubeConfig())).toBe('system:serviceaccount:default:reader');
  });

  it("uses a pod's service account when there is no kubeconfig: its CA, its token, the service environment", async () => {
    const account = join(dir, 'serviceaccount');
    mkdirSync(account);
    writeFileSync(join(account, 'token'), token);
    writeFileSync(join(account, 'ca.crt'), cluster.pki.ca.certPem);
    const { hostname, port } = new URL(cluster.server);
    process.env['KUBERNETES_SERVICE_HOST'] = hostname;
    process.env['KUBERNETES_SERVICE_PORT'] = port;
    expect(await whoAmI(inClusterKubeConfig(account))).toBe('system:serviceaccount:default:reader');
  });

  it('impersonates the user, groups, uid and extras the kubeconfig names, all of them', async () => {
    const admin = {
      'client-certificate-data': b64(cluster.pki.admin.certPem),
      'client-key-data': b64(cluster.pki.admin.keyPem),
    };
    const path = kubeconfig('impersonate.yaml', {
      ...admin,
      as: 'carol',
      'as-groups': ['team-a', 'team-b'],
      'as-uid': 'uid-7',
      'as-user-extra': { 'scopes.example.com/read only': ['pods', 'logs'] },
    });
    const info = await userInfo(loadKubeConfig(path));
    expect(info.username).toBe('carol');
    expect(info.uid).toBe('uid-7');
    expect(info.groups).toEqual(expect.arrayContaining(['team-a', 'team-b']));
    expect(info.extra).toEqual({ 'scopes.example.com/read only': ['pods', 'logs'] });
  });

  it('reaches the apiserver through a proxy-url (client-node), with its own rotating token file', async () => {
    const tunnels: string[] = [];
    const proxy = createServer();
    proxy.on('connect', (request: IncomingMessage, client: Socket, head: Buffer) => {
      tunnels.push(request.url ?? '');
      const [host, port] = (request.url ?? '').split(':');
      const upstream = connect(Number(port), host, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(client).pipe(upstream);
      });
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      writeFileSync(join(dir, 'proxied.token'), `${token}\n`);
      const { port } = proxy.address() as AddressInfo;
      const path = kubeconfig(
        'proxy.yaml',
        { tokenFile: 'proxied.token' },
        { 'proxy-url': `http://127.0.0.1:${port}` },
      );
      expect(await whoAmI(loadKubeConfig(path))).toBe('system:serviceaccount:default:reader');
      expect(tunnels).toEqual([new URL(cluster.server).host]);
    } finally {
      proxy.close();
    }
  });

  it('runs an exec plugin once for requests that wait on it together, and names it when it fails', async () => {
    const runs = join(dir, 'plugin-runs');
    writeFileSync(runs, '');
    const plugin = join(dir, 'counted-plugin.mjs');
    writeFileSync(
      plugin,
      `import { appendFileSync } from 'node:fs';
       appendFileSync(${JSON.stringify(runs)}, 'x');
       await new Promise((resolve) => setTimeout(resolve, 200));
       process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: ${JSON.stringify(token)}, expirationTimestamp: new Date(Date.now() + 3600e3).toISOString() } }));`,
    );
    const exec = (args: string[]): object => ({
      exec: {
        apiVersion: 'client.authentication.k8s.io/v1',
        command: process.execPath,
        args,
        interactiveMode: 'Never',
      },
    });
    const counted = loadKubeConfig(kubeconfig('counted.yaml', exec([plugin])));
    const names = await Promise.all(Array.from({ length: 5 }, () => whoAmI(counted)));
    expect(names).toEqual(Array(5).fill('system:serviceaccount:default:reader'));
    expect(readFileSync(runs, 'utf8')).toBe('x');

    const failing = join(dir, 'failing-plugin.mjs');
    writeFileSync(failing, 'process.exit(3);');
    const broken = loadKubeConfig(kubeconfig('failing.yaml', exec([failing])));
    const error = await whoAmI(broken).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(KubeConfigError);
    expect((error as Error).message).toContain(`exec plugin ${process.execPath}`);
  });

  it('keeps a watch open when the TLS material rotates under it: only idle connections close', async () => {
    const base = loadKubeConfig(cluster.kubeconfigPath);
    let ca = Buffer.from(cluster.pki.ca.certPem);
    const rotating: KubeConfig = {
      getCurrentCluster: () => base.getCurrentCluster(),
      applyToHTTPSOptions: async (options) => {
        await base.applyToHTTPSOptions(options);
        options.ca = ca;
      },
    };
    const transport = new KubeTransport(rotating);
    const path = '/api/v1/namespaces/default/configmaps';
    const create = (name: string): Promise<unknown> =>
      transport.request({ method: 'POST', path, body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } } });
    const stop = new AbortController();
    const added: string[] = [];
    const watching = (async () => {
      const lines = transport.streamLines({ method: 'GET', path, query: { watch: true }, signal: stop.signal });
      for await (const line of lines) {
        const event = line as { type: string; object: { metadata: { name: string } } };
        if (event.type === 'ADDED') added.push(event.object.metadata.name);
      }
    })();
    try {
      await create('before-rotation');
      await vi.waitFor(() => expect(added).toContain('before-rotation'));
      ca = Buffer.from(`${cluster.pki.ca.certPem}\n`); // new bytes, the same CA: a new agent
      await create('after-rotation');
      await vi.waitFor(() => expect(added).toContain('after-rotation'));
    } finally {
      stop.abort();
      await watching;
      transport.close();
    }
  });

  it('leaves client-node unloaded for certificates and for an exec plugin, in a process of its own', async () => {
    // The hook sees every module the process resolves; client-node must not be among them.
    const script = `
      import { registerHooks } from 'node:module';
      let loaded = false;
      registerHooks({ resolve(specifier, context, next) {
        if (specifier.includes('@kubernetes/client-node')) loaded = true;
        return next(specifier, context);
      } });
      const { loadKubeConfig, KubeTransport } = await import('@warmpool/kube');
      const transport = new KubeTransport(loadKubeConfig(process.argv[1]));
      await transport.request({ method: 'POST', path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } });
      transport.close();
      process.stdout.write(JSON.stringify({ loaded }));`;
    const loads = async (kubeconfigPath: string): Promise<unknown> => {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ['--input-type=module', '-e', script, kubeconfigPath],
        { cwd: join(import.meta.dirname, '..') },
      );
      return JSON.parse(stdout);
    };
    const plugin = join(dir, 'unloaded-plugin.mjs');
    writeFileSync(
      plugin,
      `process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: ${JSON.stringify(token)} } }));`,
    );
    const exec = { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: [plugin] };
    expect(await loads(cluster.kubeconfigPath)).toEqual({ loaded: false });
    expect(await loads(kubeconfig('unloaded-exec.yaml', { exec }))).toEqual({ loaded: false });
  });
});
