// The chart against a real apiserver: it renders, installs with Helm, its CRDs
// become Established, and its RBAC grants each component exactly what it needs.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findBinary, startCluster, type TestCluster } from '@warmpool/harness';

const run = promisify(execFile);
const CHART = fileURLToPath(new URL('..', import.meta.url));
const NAMESPACE = 'warmpool-system';

async function helm(cluster: TestCluster | undefined, args: string[]): Promise<string> {
  const env = { ...process.env, HELM_CACHE_HOME: '/tmp/warmpool-helm/cache', HELM_CONFIG_HOME: '/tmp/warmpool-helm/config', HELM_DATA_HOME: '/tmp/warmpool-helm/data' };
  if (cluster) Object.assign(env, { KUBECONFIG: cluster.kubeconfigPath });
  const { stdout } = await run(findBinary('helm'), args, { env, maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

function kinds(manifest: string): string[] {
  return [...manifest.matchAll(/^kind: (\w+)$/gm)].map((m) => m[1] as string).sort();
}

describe('the Helm chart, rendered', () => {
  it('passes helm lint', async () => {
    await expect(helm(undefined, ['lint', CHART])).resolves.toContain('0 chart(s) failed');
  });

  it('renders the control plane, the agent DaemonSet, RBAC, the token Secret, five CRDs and the aggregated Sandbox API by default', async () => {
    const out = await helm(undefined, ['template', 'warmpool', CHART, '--kube-version', '1.37.2']);
    expect(kinds(out)).toEqual([
      'APIService',
      'ClusterRole', 'ClusterRole', 'ClusterRole', 'ClusterRole', 'ClusterRoleBinding', 'ClusterRoleBinding', 'ClusterRoleBinding',
      ...Array(5).fill('CustomResourceDefinition'),
      'DaemonSet', 'Deployment', 'Role', 'RoleBinding', 'RoleBinding', 'Secret', 'Service', 'Service', 'ServiceAccount', 'ServiceAccount',
    ]);
    expect(out).not.toContain('name: sandboxes.agents.x-k8s.io');
    for (const line of ['name: v1beta1.agents.x-k8s.io', 'service: { namespace: default, name: warmpool-sandbox-api, port: 443 }', 'insecureSkipTLSVerify: true',
      '--aggregated-listen=0.0.0.0:8443', '--aggregated-tls-sans=warmpool-sandbox-api.default.svc', 'sessionAffinity: ClientIP',
      'name: system:auth-delegator', 'name: extension-apiserver-authentication-reader']) {
      expect(out).toContain(line);
    }
  });

  it('installs the Sandbox CRD instead of the APIService with sandboxApi.mode=crd (clusters that keep upstream\'s Sandboxes)', async () => {
    const out = await helm(undefined, ['template', 'warmpool', CHART, '--kube-version', '1.37.2', '--set', 'sandboxApi.mode=crd']);
    expect(kinds(out).filter((k) => k === 'CustomResourceDefinition')).toHaveLength(6);
    expect(out).toContain('name: sandboxes.agents.x-k8s.io');
    expect(kinds(out)).not.toContain('APIService');
    expect(out).not.toContain('--aggregated-listen');
  });

  it('pins the Sandbox API\'s certificate with a caBundle when given a TLS Secret', async () => {
    const out = await helm(undefined, ['template', 'warmpool', CHART, '--kube-version', '1.37.2', '--set', 'sandboxApi.tlsSecret=sandbox-api-tls', '--set', 'sandboxApi.caBundle=Q0E=']);
    expect(out).toContain('caBundle: Q0E=');
    expect(out).not.toContain('insecureSkipTLSVerify');
    expect(out).toContain('--aggregated-tls-cert-file=/var/run/warmpool-sandbox-api-tls/tls.crt');
    expect(out).toContain('secretName: sandbox-api-tls');
  });

  it('leaves the CRDs out with crds.install=false, for clusters that already run upstream agent-sandbox', async () => {
    const out = await helm(undefined, ['template', 'warmpool', CHART, '--kube-version', '1.37.2', '--set', 'crds.install=false']);
    expect(kinds(out)).not.toContain('CustomResourceDefinition');
  });

  it('adds a fake-sandboxd sidecar, reached over loopback, when fakeSandboxd.enabled (the kind path)', async () => {
    const out = await helm(undefined, ['template', 'warmpool', CHART, '--kube-version', '1.37.2', '--set', 'fakeSandboxd.enabled=true']);
    expect(out).toContain('name: fake-sandboxd');
    expect(out).toContain('--sandboxd-url=http://127.0.0.1:7070');
    expect(out).not.toContain('hostPath');
  });

  it('turns provisioning on with controlPlane.redis.url: the claim flags, the claims port and Service, TLS from a Secret', async () => {
    const off = await helm(undefined, ['template', 'warmpool', CHART, '--kube-version', '1.37.2']);
    expect(off).not.toContain('--redis-url');
    expect(off).not.toContain('warmpool-claims');
    const on = await helm(undefined, ['template', 'warmpool', CHART, '--kube-version', '1.37.2', '--set', 'controlPlane.redis.url=redis://redis:6379', '--set', 'controlPlane.claims.tlsSecret=claims-tls']);
    for (const flag of ['--redis-url=redis://redis:6379', '--claims-listen=0.0.0.0:8081', '--claims-tls-cert-file=/var/run/warmpool-claims-tls/tls.crt', '--claims-tls-key-file=/var/run/warmpool-claims-tls/tls.key', '--claim-batch-idle=2ms', '--claim-batch-max=20ms', '--claim-timeout=10s']) {
      expect(on).toContain(flag);
    }
    expect(on).toContain('name: warmpool-claims');
    expect(on).toContain('{ name: claims, containerPort: 8081 }');
    expect(on).toContain('secretName: claims-tls');
  });

  it('refuses a cluster older than the supported Kubernetes version', async () => {
    await expect(helm(undefined, ['template', 'warmpool', CHART, '--kube-version', '1.29.0'])).rejects.toThrow(/kubeVersion/);
  });
});

describe('the Helm chart, installed on a real apiserver', () => {
  let cluster: TestCluster;
  const can = async (verb: string, resource: string, sa: string): Promise<boolean> => {
    const [name, subresource] = resource.split('/');
    const args = ['auth', 'can-i', verb, name as string, `--as=system:serviceaccount:${NAMESPACE}:${sa}`, '-n', NAMESPACE];
    if (subresource) args.push(`--subresource=${subresource}`);
    const r = await cluster.kubectl(args);
    return r.stdout.trim() === 'yes';
  };

  beforeAll(async () => {
    cluster = await startCluster({ crds: false });
    await helm(cluster, ['install', 'warmpool', CHART, '-n', NAMESPACE, '--create-namespace', '--wait=false']);
  });
  afterAll(async () => cluster?.stop());

  it('installs every object, and the CRDs become Established', async () => {
    const r = await cluster.kubectl(['wait', '--for=condition=Established', '--timeout=30s', 'crd', '-l', '!nonexistent', '--all']);
    expect(r.code, r.stderr).toBe(0);
    const names = (await cluster.kubectl(['get', 'crd', '-o', 'name'])).stdout;
    for (const plural of ['sandboxwarmpools', 'sandboxtemplates', 'sandboxclaims', 'nodeinventories', 'sandboxenvs']) {
      expect(names).toContain(plural);
    }
    expect(names).not.toContain('sandboxes.agents.x-k8s.io');
    expect((await cluster.kubectl(['get', 'apiservice', 'v1beta1.agents.x-k8s.io', '-o', 'name'])).stdout).toContain('v1beta1.agents.x-k8s.io');
    const workloads = await cluster.kubectl(['get', 'deploy,ds,secret', '-n', NAMESPACE, '-o', 'name']);
    expect(workloads.stdout).toContain('deployment.apps/warmpool-control-plane');
    expect(workloads.stdout).toContain('daemonset.apps/warmpool-node-agent');
    expect(workloads.stdout).toContain('secret/warmpool-fleet-token');
  });

  it('generates a fleet token once and keeps it across upgrades', async () => {
    const read = async () => (await cluster.kubectl(['get', 'secret', 'warmpool-fleet-token', '-n', NAMESPACE, '-o', 'jsonpath={.data.token}'])).stdout;
    const before = await read();
    expect(Buffer.from(before, 'base64').toString()).toMatch(/^[A-Za-z0-9]{48}$/);
    await helm(cluster, ['upgrade', 'warmpool', CHART, '-n', NAMESPACE, '--wait=false']);
    expect(await read()).toBe(before);
  });

  it('lets a node agent publish inventories and read nodes, and nothing more', async () => {
    expect(await can('patch', 'nodeinventories.warmpool.dev', 'warmpool-node-agent')).toBe(true);
    expect(await can('create', 'nodeinventories.warmpool.dev', 'warmpool-node-agent')).toBe(true);
    expect(await can('get', 'nodes', 'warmpool-node-agent')).toBe(true);
    expect(await can('delete', 'nodeinventories.warmpool.dev', 'warmpool-node-agent')).toBe(false);
    expect(await can('list', 'sandboxwarmpools.extensions.agents.x-k8s.io', 'warmpool-node-agent')).toBe(false);
    expect(await can('get', 'secrets', 'warmpool-node-agent')).toBe(false);
  });

  it('lets the control plane read intent, write pool status and its Lease, but never write specs or secrets', async () => {
    expect(await can('watch', 'sandboxwarmpools.extensions.agents.x-k8s.io', 'warmpool-control-plane')).toBe(true);
    expect(await can('patch', 'sandboxwarmpools.extensions.agents.x-k8s.io/status', 'warmpool-control-plane')).toBe(true);
    expect(await can('watch', 'nodeinventories.warmpool.dev', 'warmpool-control-plane')).toBe(true);
    expect(await can('update', 'leases.coordination.k8s.io', 'warmpool-control-plane')).toBe(true);
    expect(await can('create', 'events', 'warmpool-control-plane')).toBe(true);
    expect(await can('patch', 'sandboxwarmpools.extensions.agents.x-k8s.io', 'warmpool-control-plane')).toBe(false);
    expect(await can('delete', 'sandboxwarmpools.extensions.agents.x-k8s.io', 'warmpool-control-plane')).toBe(false);
    expect(await can('get', 'secrets', 'warmpool-control-plane')).toBe(false);
  });

  it('lets the control plane review the claim API\'s callers (TokenReview, SubjectAccessReview)', async () => {
    expect(await can('create', 'tokenreviews.authentication.k8s.io', 'warmpool-control-plane')).toBe(true);
    expect(await can('create', 'subjectaccessreviews.authorization.k8s.io', 'warmpool-control-plane')).toBe(true);
  });

  it('lets the control plane read the front proxy settings in kube-system, as an extension apiserver', async () => {
    const r = await cluster.kubectl(['auth', 'can-i', 'get', 'configmaps/extension-apiserver-authentication', '-n', 'kube-system', `--as=system:serviceaccount:${NAMESPACE}:warmpool-control-plane`]);
    expect(r.stdout.trim()).toBe('yes');
    const other = await cluster.kubectl(['auth', 'can-i', 'get', 'configmaps/kube-proxy', '-n', 'kube-system', `--as=system:serviceaccount:${NAMESPACE}:warmpool-control-plane`]);
    expect(other.stdout.trim()).toBe('no');
  });
});
