// The chart's sandbox router (router.enabled): off by default; on, a
// Deployment behind the Service name upstream's clients look for, and RBAC
// that lets it read exactly what it routes by, installed on a real apiserver.
import { loadAllYaml } from '@kubernetes/client-node';
import { runHelm, startCluster, type TestCluster } from '@warmpool/harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHART, helmInstall, NAMESPACE, setArgs } from './support.js';

interface Rendered {
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: { template?: { spec: { containers: Array<{ name: string; args: string[] }> } }; ports?: unknown[] };
}

async function render(set: string[]): Promise<Rendered[]> {
  const out = await runHelm([
    'template',
    'warmpool',
    CHART,
    '-n',
    NAMESPACE,
    ...setArgs(['fakeSandboxd.enabled=true', ...set]),
  ]);
  return (loadAllYaml(out) as Array<Rendered | null>).filter((o): o is Rendered => o !== null);
}

describe('the chart’s sandbox router, rendered', () => {
  it('is off by default', async () => {
    const objects = await render([]);
    expect(objects.filter((o) => o.metadata.name.includes('router'))).toEqual([]);
  });

  it('runs a Deployment behind svc/sandbox-router-svc port 8080, with its settings as flags', async () => {
    const objects = await render(['router.enabled=true', 'router.tokenlessUser=sandbox-router-guest']);
    const service = objects.find((o) => o.kind === 'Service' && o.metadata.name === 'sandbox-router-svc');
    expect(service?.metadata.namespace).toBe(NAMESPACE);
    expect(service?.spec?.ports).toEqual([{ name: 'http', port: 8080, targetPort: 'http' }]);
    const deployment = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'warmpool-router');
    const args = deployment?.spec?.template?.spec.containers.find((c) => c.name === 'router')?.args ?? [];
    expect(args).toEqual(
      expect.arrayContaining([
        '--listen=0.0.0.0:8080',
        '--runtime-port=8888',
        '--tokenless-user=sandbox-router-guest',
        '--log-format=json',
      ]),
    );
    expect(
      (await render(['router.enabled=true']))
        .flatMap((o) => o.spec?.template?.spec.containers ?? [])
        .flatMap((c) => c.args),
    ).not.toContainEqual(expect.stringContaining('--tokenless-user'));
  });

  it("lets the router reach the fake sidecar's sandboxes: it advertises the pod's address, which the NetworkPolicy opens to the router", async () => {
    const fakeArgs = (objects: Rendered[]) =>
      objects
        .find((o) => o.kind === 'DaemonSet')
        ?.spec?.template?.spec.containers.find((c) => c.name === 'fake-sandboxd')?.args ?? [];
    expect(fakeArgs(await render([]))).toContain('--listen=127.0.0.1:7070');
    const objects = await render(['router.enabled=true', 'networkPolicy.enabled=true']);
    expect(fakeArgs(objects)).toEqual(expect.arrayContaining(['--listen=0.0.0.0:7070', '--advertise=$(POD_IP):7070']));
    // client-node's loader names `from` `_from`.
    const policy = objects.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === 'warmpool-node-agent') as
      { spec: { ingress: Array<{ _from: unknown[]; ports: unknown[] }> } } | undefined;
    const toFake = policy?.spec.ingress.find((rule) => JSON.stringify(rule.ports).includes('7070'));
    expect(toFake?.ports).toEqual([{ protocol: 'TCP', port: 7070 }]);
    expect(toFake?._from).toEqual([
      { podSelector: { matchLabels: expect.objectContaining({ 'app.kubernetes.io/component': 'router' }) } },
    ]);
  });

  it('reads claim Secrets only in router.secretNamespaces when listed (a RoleBinding each)', async () => {
    const objects = await render(['router.enabled=true', 'router.secretNamespaces={team-a,team-b}']);
    const bindings = objects.filter((o) => o.metadata.name === 'warmpool-router-secrets' && o.kind.endsWith('Binding'));
    expect(bindings.map((o) => [o.kind, o.metadata.namespace])).toEqual([
      ['RoleBinding', 'team-a'],
      ['RoleBinding', 'team-b'],
    ]);
  });

  it('refuses sandboxApi.mode=crd (no Sandbox to check a Secret against) and a bad service name', async () => {
    await expect(render(['router.enabled=true', 'sandboxApi.mode=crd'])).rejects.toThrow(/sandboxApi.mode=aggregated/);
    await expect(render(['router.enabled=true', 'router.serviceName=Bad_Name'])).rejects.toThrow(/serviceName/);
  });
});

describe('the chart’s sandbox router, installed on a real apiserver', () => {
  let cluster: TestCluster;
  /** A SubjectAccessReview for the router's ServiceAccount (kubectl auth can-i needs discovery of every group). */
  const can = async (verb: string, resource: string, namespace = 'somewhere'): Promise<boolean> => {
    const [plural, ...group] = resource.split('.');
    const review = {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: `system:serviceaccount:${NAMESPACE}:warmpool-router`,
        groups: ['system:serviceaccounts', `system:serviceaccounts:${NAMESPACE}`, 'system:authenticated'],
        resourceAttributes: { namespace, verb, group: group.join('.'), resource: plural },
      },
    };
    const r = await cluster.kubectl(['create', '-f', '-', '-o', 'jsonpath={.status.allowed}'], {
      input: JSON.stringify(review),
    });
    if (r.code !== 0) throw new Error(r.stderr);
    return r.stdout.trim() === 'true';
  };

  beforeAll(async () => {
    cluster = await startCluster({ crds: false });
    await helmInstall(cluster, ['fakeSandboxd.enabled=true', 'router.enabled=true']);
  });
  afterAll(async () => cluster?.stop());

  it('may get Sandboxes, SandboxClaims and Secrets by name, and review callers; nothing more', async () => {
    for (const [verb, resource] of [
      ['get', 'sandboxes.agents.x-k8s.io'],
      ['get', 'sandboxclaims.extensions.agents.x-k8s.io'],
      ['get', 'secrets'],
      ['create', 'tokenreviews.authentication.k8s.io'],
      ['create', 'subjectaccessreviews.authorization.k8s.io'],
    ] as const)
      expect(await can(verb, resource), `${verb} ${resource}`).toBe(true);
    for (const [verb, resource] of [
      ['list', 'secrets'],
      ['watch', 'secrets'],
      ['create', 'secrets'],
      ['create', 'sandboxclaims.extensions.agents.x-k8s.io'],
      ['delete', 'sandboxes.agents.x-k8s.io'],
      ['list', 'sandboxes.agents.x-k8s.io'],
      ['get', 'pods'],
    ] as const)
      expect(await can(verb, resource), `${verb} ${resource}`).toBe(false);
  });
});
