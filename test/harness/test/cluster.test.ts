import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { AuthenticationV1Api, CoreV1Api, VersionApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get } from '../src/http.js';
import { isAlive, processGroupMembers, startCluster, type TestCluster } from '../src/index.js';

/** Live processes whose command line contains `text` (Linux /proc). */
function processesMentioning(text: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text);
      } catch {
        return false;
      }
    })
    .map(Number);
}

function statusCodeOf(error: unknown): number | undefined {
  return (error as { code?: number }).code;
}

describe('startCluster', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await startCluster({ name: 'harness-cluster', crds: false });
    console.log(
      `cluster startup: ${cluster.startupMs} ms (etcd ${cluster.timings.etcdMs} ms, apiserver ${cluster.timings.apiserverMs} ms)`,
    );
  });
  afterAll(() => cluster?.stop());

  it('serves the Kubernetes version it was built from on a loopback https URL', async () => {
    expect(cluster.server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const version = await cluster.kubeConfig.makeApiClient(VersionApi).getCode();
    expect(version.gitVersion).toBe('v1.37.2');
    expect(cluster.startupMs).toBeGreaterThan(0);
  });

  it('writes an admin kubeconfig that kubectl uses', async () => {
    const result = await cluster.kubectl(['get', 'namespace', 'default', '-o', 'jsonpath={.metadata.name}']);
    expect(result).toMatchObject({ code: 0, stdout: 'default' });
    const whoami = await cluster.kubectl(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}']);
    expect(whoami.stdout).toBe('admin');
  });

  it('creates uniquely named namespaces from a prefix', async () => {
    const a = await cluster.createNamespace('Same_Prefix');
    const b = await cluster.createNamespace('Same_Prefix');
    expect(a).toMatch(/^same-prefix-[0-9a-f]{8}$/);
    expect(a).not.toBe(b);
    const ns = await cluster.kubeConfig.makeApiClient(CoreV1Api).readNamespace({ name: a });
    expect(ns.status?.phase).toBe('Active');
  });

  it('passes kubectl its stdin', async () => {
    const ns = await cluster.createNamespace('stdin');
    const created = await cluster.kubectl(['create', '-n', ns, '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'from-stdin' },
        data: { a: 'b' },
      }),
    });
    expect(created).toMatchObject({ code: 0, stdout: 'configmap/from-stdin created\n' });
  });

  it('reports a failing kubectl command through its exit code and stderr', async () => {
    const result = await cluster.kubectl(['get', 'configmap', 'missing', '-n', 'default']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('not found');
  });

  describe('service accounts and RBAC', () => {
    let ns: string;
    let token: string;

    beforeAll(async () => {
      ns = await cluster.createNamespace('rbac');
      expect((await cluster.kubectl(['create', 'serviceaccount', 'robot', '-n', ns])).code).toBe(0);
      const created = await cluster.kubectl(['create', 'token', 'robot', '-n', ns, '--duration=10m']);
      expect(created.stderr).toBe('');
      token = created.stdout.trim();
    });

    it('issues a token for a service account through the TokenRequest API', async () => {
      expect(token.split('.')).toHaveLength(3);
      const review = await cluster
        .kubeConfigForToken(token)
        .makeApiClient(AuthenticationV1Api)
        .createSelfSubjectReview({ body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } });
      expect(review.status?.userInfo?.username).toBe(`system:serviceaccount:${ns}:robot`);
    });

    it('denies that service account by default', async () => {
      const canI = await cluster.kubectl([
        'auth',
        'can-i',
        'list',
        'configmaps',
        '-n',
        ns,
        `--as=system:serviceaccount:${ns}:robot`,
      ]);
      expect(canI.stdout.trim()).toBe('no');
      const core = cluster.kubeConfigForToken(token).makeApiClient(CoreV1Api);
      const error = await core.listNamespacedConfigMap({ namespace: ns }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(statusCodeOf(error)).toBe(403);
    });

    it('allows it once a Role grants it', async () => {
      await cluster.kubectl(['create', 'configmap', 'visible', '-n', ns, '--from-literal=a=b']);
      await cluster.kubectl(['create', 'role', 'read-configmaps', '-n', ns, '--verb=list', '--resource=configmaps']);
      await cluster.kubectl([
        'create',
        'rolebinding',
        'robot-reads',
        '-n',
        ns,
        '--role=read-configmaps',
        `--serviceaccount=${ns}:robot`,
      ]);
      const list = await cluster
        .kubeConfigForToken(token)
        .makeApiClient(CoreV1Api)
        .listNamespacedConfigMap({ namespace: ns });
      expect(list.items.map((cm) => cm.metadata?.name)).toContain('visible');
    });
  });

  describe('restarting the apiserver', () => {
    it('keeps etcd, the port and the data', async () => {
      const ns = await cluster.createNamespace('restart');
      const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
      await core.createNamespacedConfigMap({
        namespace: ns,
        body: { metadata: { name: 'survivor' }, data: { k: 'v' } },
      });
      const before = cluster.pids();

      await cluster.stopApiserver();
      expect(cluster.pids().apiserver).toBeUndefined();
      expect(isAlive(before.apiserver ?? 0)).toBe(false);
      await expect(core.readNamespacedConfigMap({ namespace: ns, name: 'survivor' })).rejects.toThrow();

      await cluster.startApiserver();
      const after = cluster.pids();
      expect(after.etcd).toBe(before.etcd);
      expect(after.apiserver).not.toBe(before.apiserver);
      // The same KubeConfig (same URL, same certificates) works again.
      const survivor = await core.readNamespacedConfigMap({ namespace: ns, name: 'survivor' });
      expect(survivor.data).toEqual({ k: 'v' });
    });

    it('restartApiserver does both in one call', async () => {
      const before = cluster.pids().apiserver;
      await cluster.restartApiserver();
      expect(cluster.pids().apiserver).not.toBe(before);
      expect((await cluster.kubectl(['get', '--raw', '/readyz'])).stdout).toBe('ok');
    });
  });

  it('does not serve the profiler unless asked', async () => {
    expect((await get(`${cluster.server}/debug/pprof/`, cluster.adminTls)).status).toBe(404);
  });

  it('stops every process it started and removes its temp dir', async () => {
    const { etcd, apiserver } = cluster.pids();
    expect(etcd).toBeDefined();
    expect(apiserver).toBeDefined();
    await cluster.stop();
    for (const pid of [etcd ?? 0, apiserver ?? 0]) {
      expect(isAlive(pid)).toBe(false);
      // The watchdog loop shares the group: nothing of it may remain either.
      expect(processGroupMembers(pid)).toEqual([]);
    }
    expect(existsSync(cluster.dataDir)).toBe(false);
    expect(cluster.pids()).toEqual({ etcd: undefined, apiserver: undefined });
  });
});

describe('startCluster with apiserverProfiling', () => {
  let cluster: TestCluster | undefined;
  afterAll(() => cluster?.stop());

  it('serves /debug/pprof to the admin client (for a benchmark that profiles the apiserver)', async () => {
    cluster = await startCluster({ name: 'harness-pprof', crds: false, apiserverProfiling: true });
    const index = await get(`${cluster.server}/debug/pprof/`, cluster.adminTls);
    expect(index.status).toBe(200);
    expect(index.body).toContain('profile');
  });
});

describe('startCluster when the apiserver does not become ready', () => {
  it('fails with the tail of the apiserver log and leaves nothing running', async () => {
    const error = await startCluster({ name: 'too-slow', crds: false, readyTimeoutMs: 1 }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(Error);
    expect(error?.message).toMatch(/kube-apiserver .*readyz not ready/);
    expect(error?.message).toContain('last log lines');
    expect(processesMentioning('warmpool-too-slow-')).toEqual([]);
    expect(readdirSync(tmpdir()).filter((entry) => entry.startsWith('warmpool-too-slow-'))).toEqual([]);
  });
});
