// The knobs operators look for (Karpenter's, cert-manager's and
// metrics-server's charts as the anchors), rendered by the real helm: one
// registry for every image, ServiceAccounts per component, extra volumes and
// envFrom, cert-manager for the APIService's CA, ServiceMonitor relabelings,
// PDB minAvailable — and the schema refusing what it does not know.
import { loadAllYaml } from '@kubernetes/client-node';
import { runHelm } from '@warmpool/harness';
import { describe, expect, it } from 'vitest';
import { CHART, setArgs } from './support.js';

interface Obj {
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  subjects?: Array<{ kind: string; name: string }>;
}
interface PodSpec {
  serviceAccountName: string;
  containers: Array<{ name: string; image: string; envFrom?: unknown[]; volumeMounts?: Array<{ name: string }> }>;
  volumes?: Array<{ name: string; secret?: { secretName: string } }>;
}

async function render(set: string[]): Promise<Obj[]> {
  const stdout = await runHelm([
    'template',
    'warmpool',
    CHART,
    '-n',
    'warmpool-system',
    ...setArgs(['fakeSandboxd.enabled=true', ...set]),
  ]);
  return (loadAllYaml(stdout) as Array<Obj | null>).filter((o): o is Obj => o !== null);
}
function find(objects: Obj[], kind: string, name: string): Obj {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (found === undefined)
    throw new Error(`no ${kind} ${name} in ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`);
  return found;
}
function pod(objects: Obj[], kind: 'Deployment' | 'DaemonSet' | 'StatefulSet', name: string): PodSpec {
  return (find(objects, kind, name).spec as { template: { spec: PodSpec } }).template.spec;
}
function images(objects: Obj[]): string[] {
  return objects
    .filter((o) => ['Deployment', 'DaemonSet', 'StatefulSet'].includes(o.kind))
    .flatMap((o) => (o.spec as { template: { spec: PodSpec } }).template.spec.containers.map((c) => c.image))
    .sort();
}

describe('chart knobs', () => {
  it('global.imageRegistry moves every image, Redis included, to one registry; unset, each keeps its own', async () => {
    expect(images(await render(['redis.enabled=true']))).toEqual([
      'docker.io/library/redis:7.2-bookworm',
      'ghcr.io/warmpool/control-plane:0.1.0',
      'ghcr.io/warmpool/fake-sandboxd:0.1.0',
      'ghcr.io/warmpool/node-agent:0.1.0',
    ]);
    expect(images(await render(['redis.enabled=true', 'global.imageRegistry=mirror.corp:5000']))).toEqual([
      'mirror.corp:5000/library/redis:7.2-bookworm',
      'mirror.corp:5000/warmpool/control-plane:0.1.0',
      'mirror.corp:5000/warmpool/fake-sandboxd:0.1.0',
      'mirror.corp:5000/warmpool/node-agent:0.1.0',
    ]);
    // A Docker Hub short name has no registry part: the mirror goes in front.
    const short = await render([
      'redis.enabled=true',
      'redis.image.repository=redis',
      'global.imageRegistry=mirror.corp',
    ]);
    expect(images(short)).toContain('mirror.corp/redis:7.2-bookworm');
  });

  it('serviceAccount.{create,name,annotations} per component; every binding and the admission policy follow the name', async () => {
    const byDefault = await render([]);
    expect(pod(byDefault, 'Deployment', 'warmpool-control-plane').serviceAccountName).toBe('warmpool-control-plane');
    expect(find(byDefault, 'ServiceAccount', 'warmpool-node-agent')).toBeDefined();

    const own = await render([
      'controlPlane.serviceAccount.create=false',
      'controlPlane.serviceAccount.name=platform-cp',
      'nodeAgent.serviceAccount.name=agents',
      'nodeAgent.serviceAccount.annotations.iam\\.example/role=sandbox-nodes',
    ]);
    // The uninstall hook's own account (a Job that runs only at helm uninstall) is not a component's.
    const components = (name: string): boolean => name !== 'warmpool-uninstall';
    expect(
      own.filter((o) => o.kind === 'ServiceAccount' && components(o.metadata.name)).map((o) => o.metadata.name),
    ).toEqual(['agents']);
    expect(find(own, 'ServiceAccount', 'agents').metadata.annotations).toEqual({ 'iam.example/role': 'sandbox-nodes' });
    expect(pod(own, 'Deployment', 'warmpool-control-plane').serviceAccountName).toBe('platform-cp');
    expect(pod(own, 'DaemonSet', 'warmpool-node-agent').serviceAccountName).toBe('agents');
    const subjects = own
      .filter((o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding')
      .flatMap((o) => o.subjects ?? [])
      .filter((s) => s.kind === 'ServiceAccount' && components(s.name))
      .map((s) => s.name);
    expect(new Set(subjects)).toEqual(new Set(['platform-cp', 'agents']));
    const policy = find(own, 'ValidatingAdmissionPolicy', 'warmpool-node-agent-own-inventory');
    expect(JSON.stringify(policy.spec)).toContain('system:serviceaccount:warmpool-system:agents');
    // Never the namespace's default account, which every other pod there runs as: the bindings would grant it.
    for (const component of ['controlPlane', 'nodeAgent'])
      await expect(render([`${component}.serviceAccount.create=false`])).rejects.toThrow(
        /serviceAccount.create=false for (control-plane|node-agent) needs serviceAccount.name/,
      );
  });

  it('extraVolumes, extraVolumeMounts and envFrom reach both components', async () => {
    const objects = await render(
      ['controlPlane', 'nodeAgent'].flatMap((c) => [
        `${c}.extraVolumes[0].name=extra`,
        `${c}.extraVolumes[0].configMap.name=extra-${c}`,
        `${c}.extraVolumeMounts[0].name=extra`,
        `${c}.extraVolumeMounts[0].mountPath=/etc/extra`,
        `${c}.envFrom[0].secretRef.name=env-${c}`,
      ]),
    );
    for (const [kind, name, component] of [
      ['Deployment', 'warmpool-control-plane', 'controlPlane'],
      ['DaemonSet', 'warmpool-node-agent', 'nodeAgent'],
    ] as const) {
      const spec = pod(objects, kind, name);
      const container = spec.containers[0]!;
      expect(spec.volumes).toContainEqual({ name: 'extra', configMap: { name: `extra-${component}` } });
      expect(container.volumeMounts).toContainEqual({ name: 'extra', mountPath: '/etc/extra' });
      expect(container.envFrom).toEqual([{ secretRef: { name: `env-${component}` } }]);
    }
  });

  it('sandboxApi.certManager: cert-manager issues the serving certificate and injects its CA into the APIService', async () => {
    const objects = await render([
      'sandboxApi.certManager.enabled=true',
      'sandboxApi.apiServiceAnnotations.team=platform',
    ]);
    const apiService = find(objects, 'APIService', 'v1beta1.agents.x-k8s.io');
    expect(apiService.metadata.annotations).toEqual({
      team: 'platform',
      'cert-manager.io/inject-ca-from': 'warmpool-system/warmpool-sandbox-api',
    });
    expect(apiService.spec).not.toHaveProperty('insecureSkipTLSVerify');
    expect(apiService.spec).not.toHaveProperty('caBundle');
    expect(find(objects, 'Issuer', 'warmpool-sandbox-api-selfsigned').spec).toEqual({ selfSigned: {} });
    expect(find(objects, 'Certificate', 'warmpool-sandbox-api').spec).toMatchObject({
      secretName: 'warmpool-sandbox-api-tls',
      dnsNames: ['warmpool-sandbox-api.warmpool-system.svc', 'warmpool-sandbox-api.warmpool-system.svc.cluster.local'],
      issuerRef: { name: 'warmpool-sandbox-api-selfsigned', kind: 'Issuer' },
    });
    const spec = pod(objects, 'Deployment', 'warmpool-control-plane');
    expect(spec.volumes).toContainEqual({
      name: 'sandbox-api-tls',
      secret: { secretName: 'warmpool-sandbox-api-tls' },
    });

    const ownIssuer = await render([
      'sandboxApi.certManager.enabled=true',
      'sandboxApi.certManager.issuerRef.name=corp-ca',
      'sandboxApi.certManager.issuerRef.kind=ClusterIssuer',
    ]);
    expect(ownIssuer.some((o) => o.kind === 'Issuer')).toBe(false);
    expect(find(ownIssuer, 'Certificate', 'warmpool-sandbox-api').spec).toMatchObject({
      issuerRef: { name: 'corp-ca', kind: 'ClusterIssuer' },
    });
    await expect(render(['sandboxApi.certManager.enabled=true', 'sandboxApi.tlsSecret=mine'])).rejects.toThrow(
      /leave sandboxApi.tlsSecret empty/,
    );

    const byDefault = find(await render([]), 'APIService', 'v1beta1.agents.x-k8s.io');
    expect(byDefault.spec).toHaveProperty('insecureSkipTLSVerify', true);
  });

  it('ServiceMonitor and PodMonitor take scrapeTimeout, relabelings and metricRelabelings', async () => {
    const set = ['serviceMonitor', 'podMonitor'].flatMap((m) => [
      `monitoring.${m}.enabled=true`,
      `monitoring.${m}.scrapeTimeout=10s`,
      `monitoring.${m}.relabelings[0].targetLabel=cluster`,
      `monitoring.${m}.relabelings[0].replacement=east`,
      `monitoring.${m}.metricRelabelings[0].action=drop`,
      `monitoring.${m}.metricRelabelings[0].regex=nodejs_.*`,
      `monitoring.${m}.metricRelabelings[0].sourceLabels[0]=__name__`,
    ]);
    const objects = await render(set);
    const endpoint = {
      interval: '30s',
      scrapeTimeout: '10s',
      relabelings: [{ targetLabel: 'cluster', replacement: 'east' }],
      metricRelabelings: [{ action: 'drop', regex: 'nodejs_.*', sourceLabels: ['__name__'] }],
    };
    expect(
      (find(objects, 'ServiceMonitor', 'warmpool-control-plane').spec as { endpoints: unknown[] }).endpoints,
    ).toEqual([{ port: 'metrics', path: '/metrics', ...endpoint }]);
    expect(
      (find(objects, 'PodMonitor', 'warmpool-node-agent').spec as { podMetricsEndpoints: unknown[] })
        .podMetricsEndpoints,
    ).toEqual([{ port: 'http', path: '/metrics', ...endpoint }]);
  });

  it('the PodDisruptionBudget takes minAvailable instead of maxUnavailable', async () => {
    expect(find(await render([]), 'PodDisruptionBudget', 'warmpool-control-plane').spec).toMatchObject({
      maxUnavailable: 1,
    });
    const spec = find(
      await render(['controlPlane.replicas=3', 'controlPlane.podDisruptionBudget.minAvailable=2']),
      'PodDisruptionBudget',
      'warmpool-control-plane',
    ).spec;
    expect(spec).toHaveProperty('minAvailable', 2);
    expect(spec).not.toHaveProperty('maxUnavailable');
  });

  it('the schema refuses what it does not know', async () => {
    await expect(render(['controlPlane.serviceAccount.nam=typo'])).rejects.toThrow(/serviceAccount/);
    await expect(render(['monitoring.serviceMonitor.scrapeTimeout=ten'])).rejects.toThrow(/scrapeTimeout/);
    await expect(render(['sandboxApi.certManager.issuerRef.kind=Vault'])).rejects.toThrow(/kind/);
  });
});
