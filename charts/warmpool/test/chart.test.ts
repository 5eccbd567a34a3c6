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

  it('renders the control plane, the agent DaemonSet, RBAC, the token Secret and all six CRDs by default', async () => {
    const out = await helm(undefined, ['template', 'warmpool', CHART, '--kube-version', '1.37.2']);
    expect(kinds(out)).toEqual([
      'ClusterRole', 'ClusterRole', 'ClusterRoleBinding', 'ClusterRoleBinding',
      ...Array(6).fill('CustomResourceDefinition'),
      'DaemonSet', 'Deployment', 'Role', 'RoleBinding', 'Secret', 'Service', 'ServiceAccount', 'ServiceAccount',
      'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding',
    ]);
  });

  it('points the control plane at the agents\' pods by the labels the DaemonSet gives them', async () => {
    const out = await helm(undefined, ['template', 'warmpool', CHART, '--kube-version', '1.37.2']);
    expect(out).toContain('- --agent-pod-selector=app.kubernetes.io/instance=warmpool,app.kubernetes.io/component=node-agent');
    expect(out).toContain('labels: { app.kubernetes.io/name: warmpool, app.kubernetes.io/instance: warmpool, app.kubernetes.io/component: node-agent }');
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
    // The sidecar reads the fleet token from the mounted Secret, so a rotation reaches it without a restart.
    expect(out).toContain('--api-token-file=/var/run/warmpool/token');
    expect(out).not.toContain('SANDBOXD_API_TOKEN');
    expect(out.match(/--token-grace=5m/g)).toHaveLength(3);
  });

  it('runs the agent with its heap flags, and gives its shutdown (preStop, drain delay, in-flight timeout) the grace period it needs', async () => {
    const out = await helm(undefined, ['template', 'warmpool', CHART, '--kube-version', '1.37.2', '--set', 'nodeAgent.drainDelaySeconds=7']);
    expect(out).toMatch(/- \{ name: NODE_OPTIONS, value: "--max-old-space-size=\d+ [^"]*" \}/);
    expect(out).toContain('lifecycle: { preStop: { sleep: { seconds: 2 } } }');
    expect(out).toContain('- --drain-delay=7s');
    expect(out).toContain('- --shutdown-timeout=20s');
    // 2 s preStop + 7 s drain + 20 s for requests in flight + 5 s.
    expect(out).toContain('terminationGracePeriodSeconds: 34');
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
    for (const plural of ['sandboxwarmpools', 'sandboxtemplates', 'sandboxclaims', 'sandboxes', 'nodeinventories', 'sandboxenvs']) {
      expect(names).toContain(plural);
    }
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
    expect(await can('watch', 'nodes', 'warmpool-control-plane')).toBe(true);
    expect(await can('watch', 'pods', 'warmpool-control-plane')).toBe(true);
    const canGetCrd = async (name: string): Promise<boolean> =>
      (await cluster.kubectl(['auth', 'can-i', 'get', `customresourcedefinitions.apiextensions.k8s.io/${name}`, `--as=system:serviceaccount:${NAMESPACE}:warmpool-control-plane`])).stdout.trim() === 'yes';
    expect(await canGetCrd('sandboxwarmpools.extensions.agents.x-k8s.io')).toBe(true);
    expect(await canGetCrd('nodeinventories.warmpool.dev')).toBe(false);
    expect(await can('patch', 'nodes', 'warmpool-control-plane')).toBe(false);
    expect(await can('patch', 'sandboxwarmpools.extensions.agents.x-k8s.io', 'warmpool-control-plane')).toBe(false);
    expect(await can('delete', 'sandboxwarmpools.extensions.agents.x-k8s.io', 'warmpool-control-plane')).toBe(false);
    expect(await can('get', 'secrets', 'warmpool-control-plane')).toBe(false);
  });
});
