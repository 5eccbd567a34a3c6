// The chart against a real apiserver: it renders, installs with Helm, its CRDs
// become Established, and its RBAC grants each component exactly what it needs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dumpYaml, loadAllYaml } from '@kubernetes/client-node';
// The wire form as plain data (client-node's loaders type objects: `from` becomes `_from`).
import { load as loadYamlPlain } from 'js-yaml';
import { Redis } from 'ioredis';
import {
  findOnPath,
  freePort,
  ManagedChild,
  respCommand,
  runHelm,
  startCluster,
  eventually,
  type TestCluster,
} from '@warmpool/harness';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHART, helmInstall, NAMESPACE, setArgs } from './support.js';

function helm(cluster: TestCluster | undefined, args: string[]): Promise<string> {
  return runHelm(args, cluster ? { kubeconfigPath: cluster.kubeconfigPath } : {});
}

function kinds(manifest: string): string[] {
  return [...manifest.matchAll(/^kind: (\w+)$/gm)].map((m) => m[1] as string).sort();
}

interface Rendered {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}
// Container and pod shapes the assertions below read.
interface Container {
  name: string;
  image: string;
  imagePullPolicy?: string;
  args: string[];
  env?: Array<{ name: string; value?: string }>;
  ports?: Array<{ name: string; containerPort: number }>;
  volumeMounts?: Array<{ name: string; mountPath: string; readOnly?: boolean }>;
  livenessProbe?: { httpGet: { path: string; port: string } };
  readinessProbe?: { httpGet: { port: string } };
  startupProbe?: unknown;
  securityContext?: Record<string, unknown>;
}
interface PodTemplate {
  metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
  spec: {
    containers: Container[];
    volumes: Array<{ name: string; secret?: { secretName: string; items: Array<{ key: string }> } }>;
    nodeSelector?: Record<string, string>;
    tolerations?: unknown[];
    priorityClassName?: string;
    securityContext?: Record<string, unknown>;
    imagePullSecrets?: unknown[];
    affinity?: Record<string, unknown>;
    topologySpreadConstraints?: unknown[];
  };
}

/** `helm template` for the harness's Kubernetes version with these `--set` values: the manifest as text. */
function helmTemplate(set: string[]): Promise<string> {
  return helm(undefined, ['template', 'warmpool', CHART, '--kube-version', '1.37.2', ...setArgs(set)]);
}

/** `helm template` with a cluster's defaults and the fake sidecar (so no token is required), plus `set`. */
async function render(set: string[] = [], base: string[] = ['fakeSandboxd.enabled=true']): Promise<Rendered[]> {
  const out = await helm(undefined, ['template', 'warmpool', CHART, '-n', NAMESPACE, ...setArgs([...base, ...set])]);
  return (loadAllYaml(out) as Array<Rendered | null>).filter((o): o is Rendered => o !== null);
}
const find = (objects: Rendered[], kind: string, suffix = ''): Rendered => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name.endsWith(suffix));
  if (!found) throw new Error(`no ${kind} *${suffix} rendered`);
  return found;
};
const podOf = (workload: Rendered): PodTemplate => (workload.spec as { template: PodTemplate }).template;
const containerOf = (workload: Rendered, name: string): Container => {
  const c = podOf(workload).spec.containers.find((x) => x.name === name);
  if (!c) throw new Error(`no container ${name}`);
  return c;
};

describe('the Helm chart, rendered', () => {
  it('passes helm lint --strict with its defaults', async () => {
    const out = await helm(undefined, ['lint', '--strict', CHART]);
    expect(out).toContain('0 chart(s) failed');
    expect(out).not.toMatch(/\[(WARNING|INFO|ERROR)\]/);
  });

  it("renders with a plain helm template: the harness's helm knows its Kubernetes version", async () => {
    await expect(
      helm(undefined, ['template', 'warmpool', CHART, '--set', 'fakeSandboxd.enabled=true']),
    ).resolves.toContain('kind: DaemonSet');
  });

  it('renders the control plane, its PDB, the agent DaemonSet, RBAC, the token Secret, six CRDs, the aggregated Sandbox API and the uninstall hooks by default', async () => {
    const out = await helmTemplate(['fakeSandboxd.enabled=true']);
    expect(kinds(out)).toEqual([
      'APIService',
      'ClusterRole',
      'ClusterRole',
      'ClusterRole',
      'ClusterRole',
      'ClusterRole', // uninstall hooks
      'ClusterRole', // pool autoscaler
      'ClusterRoleBinding',
      'ClusterRoleBinding',
      'ClusterRoleBinding',
      'ClusterRoleBinding', // uninstall hooks
      'ClusterRoleBinding', // pool autoscaler
      'ConfigMap', // uninstall hooks' script
      ...Array(6).fill('CustomResourceDefinition'),
      'DaemonSet',
      'Deployment',
      'Job', // pre-delete: release claims
      'Job', // post-delete: forget the nodes
      'PodDisruptionBudget',
      'Role',
      'Role', // uninstall hooks
      'RoleBinding',
      'RoleBinding',
      'RoleBinding', // uninstall hooks
      'Secret',
      'Service',
      'Service',
      'ServiceAccount',
      'ServiceAccount',
      'ServiceAccount', // uninstall hooks
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
    ]);
    expect(out).not.toContain('name: sandboxes.agents.x-k8s.io');
    for (const line of [
      'name: v1beta1.agents.x-k8s.io',
      'service: { namespace: default, name: warmpool-sandbox-api, port: 443 }',
      'insecureSkipTLSVerify: true',
      '--aggregated-listen=0.0.0.0:8443',
      '--aggregated-tls-sans=warmpool-sandbox-api.default.svc',
      'sessionAffinity: ClientIP',
      'name: system:auth-delegator',
      'name: extension-apiserver-authentication-reader',
    ]) {
      expect(out).toContain(line);
    }
  });

  it('leaves the uninstall hooks out with uninstallHooks.enabled=false', async () => {
    const out = await helmTemplate(['fakeSandboxd.enabled=true', 'uninstallHooks.enabled=false']);
    expect(kinds(out)).not.toContain('Job');
    expect(out).not.toContain('pre-delete');
  });

  it("installs the Sandbox CRD instead of the APIService with sandboxApi.mode=crd (clusters that keep upstream's Sandboxes)", async () => {
    const out = await helmTemplate(['fakeSandboxd.enabled=true', 'sandboxApi.mode=crd']);
    expect(kinds(out).filter((k) => k === 'CustomResourceDefinition')).toHaveLength(7);
    expect(out).toContain('name: sandboxes.agents.x-k8s.io');
    expect(kinds(out)).not.toContain('APIService');
    expect(out).not.toContain('--aggregated-listen');
  });

  it("pins the Sandbox API's certificate with a caBundle when given a TLS Secret", async () => {
    const out = await helmTemplate([
      'fakeSandboxd.enabled=true',
      'sandboxApi.tlsSecret=sandbox-api-tls',
      'sandboxApi.caBundle=Q0E=',
    ]);
    expect(out).toContain('caBundle: Q0E=');
    expect(out).not.toContain('insecureSkipTLSVerify');
    expect(out).toContain('--aggregated-tls-cert-file=/var/run/warmpool-sandbox-api-tls/tls.crt');
    expect(out).toContain('secretName: sandbox-api-tls');
  });

  it("points the control plane at the agents' pods by the labels the DaemonSet gives them", async () => {
    const objects = await render();
    const selector = containerOf(find(objects, 'Deployment'), 'control-plane').args.find((a) =>
      a.startsWith('--agent-pod-selector='),
    );
    expect(selector).toBe(
      '--agent-pod-selector=app.kubernetes.io/instance=warmpool,app.kubernetes.io/component=node-agent',
    );
    expect(podOf(find(objects, 'DaemonSet')).metadata.labels).toMatchObject({
      'app.kubernetes.io/instance': 'warmpool',
      'app.kubernetes.io/component': 'node-agent',
    });
  });

  it('fails the install with a clear message when a real sandboxd is used and no token is given', async () => {
    await expect(render([], [])).rejects.toThrow(
      /fleetToken: a real sandboxd only accepts the token it was configured with.*existingSecret/s,
    );
    await expect(render(['fleetToken.value=s3cret'], [])).resolves.toBeDefined();
    await expect(render(['fleetToken.existingSecret=mine'], [])).resolves.toBeDefined();
  });

  it("splits the CRD switch: upstream's kinds and warmpool's own, each on its own", async () => {
    // sandboxApi.mode=crd: the Sandbox CRD is one of upstream's kinds (the default serves sandboxes instead).
    const crds = async (set: string[]) =>
      (await render(['sandboxApi.mode=crd', ...set]))
        .filter((o) => o.kind === 'CustomResourceDefinition')
        .map((o) => o.metadata.name)
        .sort();
    expect(await crds(['crds.upstream.install=false'])).toEqual([
      'nodeinventories.warmpool.dev',
      'sandboxenvs.warmpool.dev',
      'sandboxwarmpoolautoscalers.warmpool.dev',
    ]);
    expect(await crds(['crds.warmpool.install=false'])).toEqual([
      'sandboxclaims.extensions.agents.x-k8s.io',
      'sandboxes.agents.x-k8s.io',
      'sandboxtemplates.extensions.agents.x-k8s.io',
      'sandboxwarmpools.extensions.agents.x-k8s.io',
    ]);
    expect(await crds(['crds.upstream.install=false', 'crds.warmpool.install=false'])).toEqual([]);
  });

  it('rejects wrong types, bad durations and unknown keys through values.schema.json', async () => {
    await expect(render(['controlPlane.replicas=two'])).rejects.toThrow(/controlPlane\/replicas.*want integer/);
    await expect(render(['controlPlane.interval=banana'])).rejects.toThrow(/controlPlane\/interval/);
    await expect(render(['controlPlane.replicaz=2'])).rejects.toThrow(/additional properties 'replicaz' not allowed/);
    await expect(render(['nodeAgent.port=seventy'])).rejects.toThrow(/nodeAgent\/port/);
    await expect(render(['image.pullPolicy=Sometimes'])).rejects.toThrow(/pullPolicy/);
    await expect(render(['crds.install=false'])).rejects.toThrow(/additional properties 'install' not allowed/);
    await expect(render(['controlPlane.image.digest=latest'])).rejects.toThrow(/digest/);
    // An env value must be a string (Kubernetes refuses a number there only at apply time).
    await expect(render(['nodeAgent.extraEnv[0].name=N', 'nodeAgent.extraEnv[0].value=1'])).rejects.toThrow(
      /extraEnv\/0\/value/,
    );
  });

  it("refuses the control plane's timings it would refuse at start, so the install fails instead of every pod", async () => {
    const refused: Array<[string[], RegExp]> = [
      [['controlPlane.interval=0s'], /controlPlane.interval must be positive/],
      [['controlPlane.retryPeriod=0s'], /controlPlane.retryPeriod must be positive/],
      [['controlPlane.setPoolsTimeout=0s'], /controlPlane.setPoolsTimeout must be positive/],
      [['controlPlane.staleAfter=3s'], /staleAfter must be greater than controlPlane.interval/],
      [['controlPlane.interval=2m', 'controlPlane.staleAfter=1m30s'], /staleAfter must be greater/],
      [['controlPlane.stallTimeout=5s'], /stallTimeout must be greater than controlPlane.interval/],
      [['controlPlane.leaseDuration=5s'], /leaseDuration must be greater than controlPlane.renewDeadline/],
      [['controlPlane.renewDeadline=2400ms', 'controlPlane.retryPeriod=2s'], /renewDeadline must be greater than 1.2/],
    ];
    for (const [set, message] of refused) await expect(render(set)).rejects.toThrow(message);
    // Units add up as Go's durations do: 1m30s is 90 s, more than an 89.5 s interval; 500ms counts as half a second.
    await expect(
      render(['controlPlane.interval=89.5s', 'controlPlane.staleAfter=1m30s', 'controlPlane.stallTimeout=2m']),
    ).resolves.toBeDefined();
    await expect(render(['controlPlane.renewDeadline=2500ms', 'controlPlane.retryPeriod=2s'])).resolves.toBeDefined();
  });

  it('adds a fake-sandboxd sidecar, reached over loopback, when fakeSandboxd.enabled (the kind path)', async () => {
    const out = await helmTemplate(['fakeSandboxd.enabled=true']);
    expect(out).toContain('name: fake-sandboxd');
    expect(out).toContain('--sandboxd-url=http://127.0.0.1:7070');
    expect(out).not.toContain('hostPath');
    // The sidecar reads the fleet token from the mounted Secret, so a rotation reaches it without a restart.
    expect(out).toContain('--api-token-file=/var/run/warmpool/token');
    expect(out).not.toContain('SANDBOXD_API_TOKEN');
    expect(out.match(/--token-grace=5m/g)).toHaveLength(3);
    // The sidecar's room is the node's capacity, so NodeInventory's CAPACITY column is filled.
    expect(out).toContain('--capacity=2000');
  });

  it("mounts the node's sandboxd socket directory only for a unix: sandboxd, and refuses a socket outside it", async () => {
    const agentOf = async (set: string[]) => {
      const daemonSet = find(await render(['fleetToken.value=t', ...set], []), 'DaemonSet', 'node-agent');
      return { pod: podOf(daemonSet), agent: containerOf(daemonSet, 'node-agent') };
    };
    const socket = await agentOf([]);
    expect(socket.agent.args).toContain('--sandboxd-url=unix:/run/sandboxd/sandboxd.sock');
    expect(socket.agent.volumeMounts).toContainEqual({ name: 'sandboxd-socket', mountPath: '/run/sandboxd' });
    expect(socket.pod.spec.volumes).toContainEqual({
      name: 'sandboxd-socket',
      hostPath: { path: '/run/sandboxd', type: 'Directory' },
    });
    // client-go's form of the same socket (unix:///path) is the same path.
    expect((await agentOf(['nodeAgent.sandboxdUrl=unix:///run/sandboxd/s.sock'])).pod.spec.volumes).toContainEqual(
      expect.objectContaining({ name: 'sandboxd-socket' }),
    );
    // Over http nothing is mounted: a node without the directory would keep the pod from starting.
    const http = await agentOf(['nodeAgent.sandboxdUrl=http://$(HOST_IP):7777']);
    expect(http.agent.args).toContain('--sandboxd-url=http://$(HOST_IP):7777');
    expect(http.agent.env).toContainEqual({ name: 'HOST_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } });
    expect(http.agent.volumeMounts?.map((m) => m.name)).not.toContain('sandboxd-socket');
    expect(http.pod.spec.volumes.map((v) => v.name)).not.toContain('sandboxd-socket');
    await expect(agentOf(['nodeAgent.sandboxdUrl=unix:/var/run/other/sandboxd.sock'])).rejects.toThrow(
      /the socket \/var\/run\/other\/sandboxd.sock is not inside nodeAgent.sandboxdSocketDir \(\/run\/sandboxd\)/,
    );
    await expect(agentOf(['nodeAgent.sandboxdUrl=unix:/run/sandboxd-other.sock'])).rejects.toThrow(/not inside/);
    await expect(agentOf(['nodeAgent.sandboxdUrl=unix:/run/sandboxd/../x.sock'])).rejects.toThrow(/not inside/);
    expect((await agentOf(['nodeAgent.sandboxdSocketDir=/run/sandboxd//'])).agent.volumeMounts).toContainEqual(
      expect.objectContaining({ name: 'sandboxd-socket' }),
    );
    await expect(agentOf(['nodeAgent.sandboxdSocketDir=/'])).rejects.toThrow(/sandboxdSocketDir/);
    // The agent speaks http and unix only.
    await expect(agentOf(['nodeAgent.sandboxdUrl=https://10.0.0.1:7777'])).rejects.toThrow(/sandboxdUrl/);
  });

  it('starts every probed container under a startup probe, so a slow start on a busy node is no liveness kill', async () => {
    const objects = await render(['router.enabled=true', 'redis.enabled=true', 'fleetToken.value=t']);
    const probed = objects
      .filter((o) => o.kind === 'Deployment' || o.kind === 'DaemonSet')
      .flatMap((workload) =>
        podOf(workload)
          .spec.containers.filter((c) => c.livenessProbe !== undefined)
          .map((c) => ({ at: `${workload.metadata.name}/${c.name}`, startupProbe: c.startupProbe })),
      );
    expect(probed.map((p) => p.at)).toEqual(
      expect.arrayContaining(['warmpool-node-agent/node-agent', 'warmpool-router/router']),
    );
    for (const { at, startupProbe } of probed) expect(startupProbe, at).toBeDefined();
  });

  it('places agents only on sandbox nodes, with narrow tolerations and no hard-coded priority class', async () => {
    const agent = podOf(find(await render(), 'DaemonSet'));
    expect(agent.spec.nodeSelector).toEqual({ 'warmpool.dev/sandbox-node': 'true' });
    expect(agent.spec.tolerations).toEqual([
      { key: 'warmpool.dev/sandbox-node', operator: 'Exists', effect: 'NoSchedule' },
    ]);
    expect(agent.spec.priorityClassName).toBeUndefined();
    const set = await render([
      'nodeAgent.priorityClassName=system-node-critical',
      'controlPlane.priorityClassName=high',
      'nodeAgent.podSecurityContext.supplementalGroups={1234}',
      'nodeAgent.capacity=64',
    ]);
    expect(podOf(find(set, 'DaemonSet')).spec.priorityClassName).toBe('system-node-critical');
    expect(podOf(find(set, 'Deployment')).spec.priorityClassName).toBe('high');
    expect(podOf(find(set, 'DaemonSet')).spec.securityContext).toMatchObject({
      runAsUser: 65532,
      runAsGroup: 65532,
      supplementalGroups: [1234],
    });
    expect(containerOf(find(set, 'DaemonSet'), 'node-agent').args).toContain('--capacity=64');
  });

  it('runs the control plane spread out, with a PDB, probes on their own port and a liveness that means something', async () => {
    const objects = await render();
    const cp = find(objects, 'Deployment');
    const pod = podOf(cp);
    const container = containerOf(cp, 'control-plane');
    expect(container.ports).toEqual([
      { name: 'metrics', containerPort: 8080 },
      { name: 'probes', containerPort: 9440 },
      { name: 'sandbox-api', containerPort: 8443 },
    ]);
    expect(container.args).toEqual(
      expect.arrayContaining([
        '--metrics-bind-address=0.0.0.0:8080',
        '--health-probe-bind-address=0.0.0.0:9440',
        '--stall-timeout=2m',
        '--leader-elect=true',
        '--leader-elect-lease-duration=15s',
      ]),
    );
    expect(container.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'probes' });
    expect(container.readinessProbe?.httpGet.port).toBe('probes');
    expect(container.startupProbe).toBeDefined();
    expect(JSON.stringify(pod.spec.affinity)).toContain('podAntiAffinity');
    expect(pod.spec.topologySpreadConstraints).toHaveLength(1);
    expect(find(objects, 'PodDisruptionBudget').spec).toMatchObject({ maxUnavailable: 1 });
    expect(find(objects, 'Service').spec).toMatchObject({
      ports: [{ name: 'metrics', port: 8080, targetPort: 'metrics' }],
    });
    expect((await render(['controlPlane.replicas=1'])).some((o) => o.kind === 'PodDisruptionBudget')).toBe(false);
    await expect(render(['controlPlane.leaderElect=false'])).rejects.toThrow(
      /leaderElect=false drives without a Lease/,
    );
    expect(
      containerOf(
        find(await render(['controlPlane.leaderElect=false', 'controlPlane.replicas=1']), 'Deployment'),
        'control-plane',
      ).args,
    ).toContain('--leader-elect=false');
  });

  it('takes the usual knobs: namespace, names, images by tag or digest, pull secrets, pod metadata, extra args and env', async () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    const objects = await render([
      'namespaceOverride=elsewhere',
      'fullnameOverride=wp',
      'imagePullSecrets[0].name=regcred',
      'nodeAgent.image.repository=registry.example/agent',
      `nodeAgent.image.digest=${digest}`,
      'controlPlane.image.tag=9.9.9',
      'controlPlane.podAnnotations.team=sandbox',
      'controlPlane.podLabels.tier=control',
      'controlPlane.extraArgs={--set-pools-attempts=5}',
      'nodeAgent.extraEnv[0].name=EXTRA',
      'nodeAgent.extraEnv[0].value=one',
      'commonLabels.owner=platform',
    ]);
    const clusterScoped = [
      'APIService',
      'ClusterRole',
      'ClusterRoleBinding',
      'CustomResourceDefinition',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
    ];
    const namespaced = objects.filter((o) => !clusterScoped.includes(o.kind));
    expect(namespaced.length).toBeGreaterThan(5);
    // The one exception: the Sandbox API's RoleBinding to extension-apiserver-authentication-reader lives in
    // kube-system.
    for (const o of namespaced)
      expect(o.metadata.namespace, `${o.kind} ${o.metadata.name}`).toBe(
        o.metadata.name.endsWith('-auth-reader') ? 'kube-system' : 'elsewhere',
      );
    // The admission policy names the agents' ServiceAccount in that namespace.
    expect(JSON.stringify(find(objects, 'ValidatingAdmissionPolicy').spec)).toContain(
      'system:serviceaccount:elsewhere:wp-node-agent',
    );
    for (const o of objects.filter((x) => x.kind !== 'CustomResourceDefinition'))
      expect(o.metadata.labels?.['owner'], `${o.kind} ${o.metadata.name}`).toBe('platform');
    const cp = find(objects, 'Deployment');
    expect(cp.metadata.name).toBe('wp-control-plane');
    expect(containerOf(cp, 'control-plane').image).toBe('ghcr.io/warmpool/control-plane:9.9.9');
    expect(containerOf(cp, 'control-plane').args).toContain('--set-pools-attempts=5');
    expect(podOf(cp).metadata.annotations).toMatchObject({ team: 'sandbox' });
    expect(podOf(cp).metadata.labels).toMatchObject({ tier: 'control' });
    expect(podOf(cp).spec.imagePullSecrets).toEqual([{ name: 'regcred' }]);
    const agent = find(objects, 'DaemonSet');
    expect(containerOf(agent, 'node-agent').image).toBe(`registry.example/agent@${digest}`);
    expect(containerOf(agent, 'node-agent').env?.find((e) => e.name === 'EXTRA')?.value).toBe('one');
    expect(containerOf(agent, 'fake-sandboxd').image).toBe('ghcr.io/warmpool/fake-sandboxd:0.1.0');
  });

  it('mounts an existing fleet token Secret by its key, renders none itself, and rolls the pods when a chart-managed token changes', async () => {
    const existing = await render(
      ['fleetToken.existingSecret=platform-token', 'fleetToken.existingSecretKey=fleet'],
      [],
    );
    expect(existing.some((o) => o.kind === 'Secret')).toBe(false);
    for (const kind of ['Deployment', 'DaemonSet']) {
      const volume = podOf(find(existing, kind)).spec.volumes.find((v) => v.name === 'fleet-token');
      expect(volume?.secret).toEqual({ secretName: 'platform-token', items: [{ key: 'fleet', path: 'token' }] });
    }
    const checksum = async (value: string) =>
      podOf(find(await render([`fleetToken.value=${value}`], []), 'DaemonSet')).metadata.annotations?.[
        'checksum/fleet-token'
      ];
    expect(await checksum('one')).toMatch(/^[0-9a-f]{64}$/);
    expect(await checksum('one')).not.toBe(await checksum('two'));
  });

  it("renders an optional NetworkPolicy: only the control plane (and the metrics scrapers) reach the agents' port", async () => {
    expect((await render()).some((o) => o.kind === 'NetworkPolicy')).toBe(false);
    const policy = find(
      await render(['networkPolicy.enabled=true', 'networkPolicy.metricsIngressFrom=null']),
      'NetworkPolicy',
      '-node-agent',
    );
    // client-node types the object (`from` becomes `_from`): compare its wire form.
    expect(dumpYaml(policy)).toMatch(
      /ingress:\n\s+- from:\n\s+- podSelector:\n\s+matchLabels:\n\s+app\.kubernetes\.io\/instance: warmpool\n\s+app\.kubernetes\.io\/component: control-plane\n\s+ports:\n\s+- port: 7071\n\s+protocol: TCP/,
    );
    expect(policy.spec).toMatchObject({
      podSelector: { matchLabels: { 'app.kubernetes.io/component': 'node-agent' } },
      policyTypes: ['Ingress'],
    });
  });

  it('renders the monitoring objects on demand: ServiceMonitor, PodMonitor, PrometheusRule, and the Grafana dashboard', async () => {
    const objects = await render([
      'monitoring.serviceMonitor.enabled=true',
      'monitoring.podMonitor.enabled=true',
      'monitoring.prometheusRule.enabled=true',
      'monitoring.dashboard.enabled=true',
    ]);
    expect(find(objects, 'ServiceMonitor').spec).toMatchObject({ endpoints: [{ port: 'metrics', path: '/metrics' }] });
    expect(find(objects, 'PodMonitor').spec).toMatchObject({
      podMetricsEndpoints: [{ port: 'http', path: '/metrics' }],
    });
    const rules = JSON.stringify(find(objects, 'PrometheusRule').spec);
    for (const alert of [
      'WarmpoolReconcileStalled',
      'WarmpoolNoLeader',
      'WarmpoolSetPoolsErrors',
      'WarmpoolUnplacedReplicas',
      'WarmpoolClaimFailures',
      'WarmpoolClaimPipelineFailures',
      'WarmpoolFederationHubDown',
    ])
      expect(rules).toContain(alert);
    expect(rules).toContain('> 300');
    const dashboard = JSON.parse(find(objects, 'ConfigMap', '-dashboard').data?.['warmpool.json'] ?? '{}') as {
      title: string;
      panels: Array<{ targets?: Array<{ expr: string }> }>;
    };
    expect(dashboard.title).toBe('warmpool');
    const exprs = dashboard.panels
      .flatMap((p) => p.targets ?? [])
      .map((t) => t.expr)
      .join('\n');
    for (const metric of [
      'warmpool_controlplane_pool_ready_replicas',
      'warmpool_controlplane_pool_desired_replicas',
      'warmpool_agent_http_request_duration_seconds_bucket',
      'process_resident_memory_bytes',
    ])
      expect(exprs).toContain(metric);
    expect((await render()).some((o) => o.kind === 'PrometheusRule' || o.kind === 'ServiceMonitor')).toBe(false);
  });

  it('runs the agent with its heap flags, and gives its shutdown (preStop, drain delay, in-flight timeout) the grace period it needs', async () => {
    const out = await helmTemplate(['nodeAgent.drainDelaySeconds=7', 'fleetToken.value=t']);
    expect(out).toMatch(
      /command: \["\/usr\/local\/bin\/node","--max-old-space-size=\d+",.*"\/app\/apps\/node-agent\/dist\/main\.js"\]/,
    );
    expect(out).toContain('lifecycle: { preStop: { sleep: { seconds: 2 } } }');
    expect(out).toContain('- --drain-delay=7s');
    expect(out).toContain('- --shutdown-timeout=20s');
    // 2 s preStop + 7 s drain + 20 s for requests in flight + 5 s.
    expect(out).toContain('terminationGracePeriodSeconds: 34');
  });

  it('turns provisioning on with controlPlane.redis.url: the claim flags, the claims port and Service, TLS from a Secret', async () => {
    const off = await helmTemplate(['fakeSandboxd.enabled=true']);
    expect(off).not.toContain('--redis-url');
    expect(off).not.toContain('warmpool-claims');
    const on = await helmTemplate([
      'fakeSandboxd.enabled=true',
      'controlPlane.redis.url=redis://redis:6379',
      'controlPlane.claims.tlsSecret=claims-tls',
    ]);
    for (const flag of [
      '--redis-url=redis://redis:6379',
      '--claims-listen=0.0.0.0:8081',
      '--claims-tls-cert-file=/var/run/warmpool-claims-tls/tls.crt',
      '--claims-tls-key-file=/var/run/warmpool-claims-tls/tls.key',
      '--claim-batch-idle=0ms',
      '--claim-batch-rejoin=5ms',
      '--claim-batch-max=20ms',
      '--claim-timeout=10s',
    ]) {
      expect(on).toContain(flag);
    }
    expect(on).toContain('name: warmpool-claims');
    expect(on).toContain('{ name: claims, containerPort: 8081 }');
    expect(on).toContain('secretName: claims-tls');
  });

  it('federates with controlPlane.federation.clusterId and redisUrl: the federation flags, and no peers file without peers', async () => {
    const off = await helmTemplate(['fakeSandboxd.enabled=true', 'controlPlane.federation.clusterId=east']);
    expect(off).not.toContain('--cluster-id');
    const on = await helmTemplate([
      'fakeSandboxd.enabled=true',
      'controlPlane.federation.clusterId=east',
      'controlPlane.federation.redisUrl=redis://hub:6379',
    ]);
    for (const flag of [
      '--cluster-id=east',
      '--federation-redis-url=redis://hub:6379',
      '--federation-interval=2s',
      '--federation-prefix=warmpool:federation',
    ]) {
      expect(on).toContain(flag);
    }
    expect(on).not.toContain('--federation-peers-file');
    expect(on).not.toContain('federation-peers');
  });

  const federated = ['controlPlane.federation.clusterId=east', 'controlPlane.federation.redisUrl=redis://hub:6379'];
  const westAndNorth = [
    'controlPlane.federation.peers[0].id=west',
    'controlPlane.federation.peers[0].claimsUrl=https://claims.west.example:8443',
    'controlPlane.federation.peers[0].tokenSecret.name=to-west',
    'controlPlane.federation.peers[0].tokenSecret.key=token',
    'controlPlane.federation.peers[0].acceptedTokenSecret.name=from-west',
    'controlPlane.federation.peers[0].acceptedTokenSecret.key=token',
    'controlPlane.federation.peers[1].id=north',
    'controlPlane.federation.peers[1].acceptedTokenSecret.name=from-north',
    'controlPlane.federation.peers[1].acceptedTokenSecret.key=secret',
  ];

  it("renders controlPlane.federation.peers into a peers file beside each peer's own token Secrets, and the flag naming it", async () => {
    const objects = await render([...federated, ...westAndNorth]);
    const deployment = find(objects, 'Deployment', '-control-plane');
    expect(containerOf(deployment, 'control-plane').args).toContain(
      '--federation-peers-file=/var/run/warmpool-federation/peers.json',
    );
    expect(containerOf(deployment, 'control-plane').volumeMounts).toContainEqual({
      name: 'federation-peers',
      mountPath: '/var/run/warmpool-federation',
      readOnly: true,
    });
    const volume = (podOf(deployment).spec as { volumes: Array<{ name: string; projected?: unknown }> }).volumes.find(
      (v) => v.name === 'federation-peers',
    );
    expect(volume?.projected).toEqual({
      sources: [
        { configMap: { name: 'warmpool-federation-peers', items: [{ key: 'peers.json', path: 'peers.json' }] } },
        { secret: { name: 'to-west', items: [{ key: 'token', path: 'peers/0/token' }] } },
        { secret: { name: 'from-west', items: [{ key: 'token', path: 'peers/0/accepted-token' }] } },
        { secret: { name: 'from-north', items: [{ key: 'secret', path: 'peers/1/accepted-token' }] } },
      ],
    });
    // The file holds no secret: ids, URLs, and the token files' names beside it.
    const configMap = find(objects, 'ConfigMap', '-federation-peers') as Rendered & { data: Record<string, string> };
    expect(JSON.parse(configMap.data['peers.json'] ?? '')).toEqual({
      peers: [
        {
          id: 'west',
          claimsUrl: 'https://claims.west.example:8443',
          tokenFile: 'peers/0/token',
          acceptedTokenFile: 'peers/0/accepted-token',
        },
        { id: 'north', acceptedTokenFile: 'peers/1/accepted-token' },
      ],
    });
  });

  it('refuses peers that could send a token elsewhere or be ambiguous, and the removed shared-token values, naming the replacement', async () => {
    const peer = (more: string[]): string[] => [...federated, 'controlPlane.federation.peers[0].id=west', ...more];
    const toWest = [
      'controlPlane.federation.peers[0].tokenSecret.name=t',
      'controlPlane.federation.peers[0].tokenSecret.key=k',
    ];
    for (const url of [
      'https://claims.west.example/v1',
      'https://claims.west.example/?swallow=',
      'https://u:p@west',
      'ftp://west',
    ]) {
      await expect(render(peer([`controlPlane.federation.peers[0].claimsUrl=${url}`, ...toWest]))).rejects.toThrow(
        /peers\/0\/claimsUrl/,
      );
    }
    // claimsUrl without the token to present there, and a peer that neither forwards nor is forwarded to.
    await expect(render(peer(['controlPlane.federation.peers[0].claimsUrl=https://west']))).rejects.toThrow(
      /tokenSecret/,
    );
    await expect(render(peer([]))).rejects.toThrow(/peers\/0/);
    await expect(render([...federated, ...westAndNorth, 'controlPlane.federation.peers[1].id=west'])).rejects.toThrow(
      /peer west is listed twice/,
    );
    for (const removed of ['tokenSecret=federation', 'claimsAdvertiseUrl=https://claims.east.example']) {
      await expect(render([...federated, `controlPlane.federation.${removed}`])).rejects.toThrow(
        /were removed.*controlPlane\.federation\.peers/,
      );
    }
  });

  it('runs an optional in-chart Redis (redis.enabled): non-root, noeviction, no snapshots, and both provisioning and federation point at it', async () => {
    expect((await render()).some((o) => o.metadata.name.endsWith('-redis'))).toBe(false);
    const objects = await render(['redis.enabled=true', 'controlPlane.federation.clusterId=east']);
    const redis = find(objects, 'Deployment', '-redis');
    expect(redis.spec).toMatchObject({ replicas: 1, strategy: { type: 'Recreate' } });
    const pod = podOf(redis);
    expect(pod.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 999 });
    const container = containerOf(redis, 'redis');
    expect(container.image).toBe('docker.io/library/redis:7.2-bookworm');
    // kind's image.pullPolicy=Never (the warmpool images are loaded) must not keep Redis from being pulled.
    expect(
      containerOf(find(await render(['redis.enabled=true', 'image.pullPolicy=Never']), 'Deployment', '-redis'), 'redis')
        .imagePullPolicy,
    ).toBe('IfNotPresent');
    expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    expect(container.args.join(' ')).toContain('--maxmemory-policy noeviction');
    expect(find(objects, 'Service', '-redis').spec).toMatchObject({ ports: [{ name: 'redis', port: 6379 }] });
    const args = containerOf(find(objects, 'Deployment', '-control-plane'), 'control-plane').args;
    expect(args).toContain('--redis-url=redis://warmpool-redis.warmpool-system.svc:6379');
    expect(args).toContain('--federation-redis-url=redis://warmpool-redis.warmpool-system.svc:6379');
    // A password the chart generates into a Secret; Redis and the control plane both read it from there.
    const password = find(objects, 'Secret', '-redis');
    expect(password.metadata.name).toBe('warmpool-redis');
    expect(Buffer.from(password.data?.password ?? '', 'base64').toString()).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(container.env).toContainEqual({
      name: 'REDIS_PASSWORD',
      valueFrom: { secretKeyRef: { name: 'warmpool-redis', key: 'password' } },
    });
    expect(container.args.join(' ')).toContain('--requirepass $(REDIS_PASSWORD)');
    expect(JSON.stringify(redis)).not.toContain(password.data?.password);
    expect(args).toContain('--redis-password-file=/var/run/warmpool-redis/password');
    expect(args).toContain('--federation-redis-password-file=/var/run/warmpool-federation-redis/password');
    const volumes = podOf(find(objects, 'Deployment', '-control-plane')).spec.volumes;
    for (const volume of ['redis-password', 'federation-redis-password']) {
      expect(volumes).toContainEqual({
        name: volume,
        secret: { secretName: 'warmpool-redis', items: [{ key: 'password', path: 'password' }] },
      });
    }
    // Or a Secret of one's own: the chart renders none.
    const own = await render([
      'redis.enabled=true',
      'redis.auth.existingSecret=my-redis',
      'redis.auth.existingSecretKey=pw',
    ]);
    expect(own.some((o) => o.kind === 'Secret' && o.metadata.name.endsWith('-redis'))).toBe(false);
    expect(containerOf(find(own, 'Deployment', '-redis'), 'redis').env).toContainEqual({
      name: 'REDIS_PASSWORD',
      valueFrom: { secretKeyRef: { name: 'my-redis', key: 'pw' } },
    });
    expect(podOf(find(own, 'Deployment', '-control-plane')).spec.volumes).toContainEqual({
      name: 'redis-password',
      secret: { secretName: 'my-redis', items: [{ key: 'pw', path: 'password' }] },
    });
    expect(find(objects, 'Service', '-claims').spec).toMatchObject({ ports: [{ name: 'claims', port: 8081 }] });
    // An explicit URL wins (a managed Redis), and a URL from a Secret keeps a password out of the pod spec.
    const managed = containerOf(
      find(
        await render(['redis.enabled=true', 'controlPlane.redis.url=rediss://user:pw@cache.example:6380/2']),
        'Deployment',
        '-control-plane',
      ),
      'control-plane',
    );
    expect(managed.args).toContain('--redis-url=rediss://user:pw@cache.example:6380/2');
    // The in-chart Redis's password is not handed to another Redis.
    expect(managed.args.some((a) => a.startsWith('--redis-password-file'))).toBe(false);
    const secret = await render(['controlPlane.redis.existingSecret=redis-url']);
    const fromSecret = containerOf(find(secret, 'Deployment', '-control-plane'), 'control-plane');
    expect(fromSecret.args.some((a) => a.startsWith('--redis-url'))).toBe(false);
    expect(fromSecret.args).toContain('--claims-listen=0.0.0.0:8081');
    expect(fromSecret.env).toContainEqual({
      name: 'WARMPOOL_REDIS_URL',
      valueFrom: { secretKeyRef: { name: 'redis-url', key: 'url' } },
    });
    expect(secret.some((o) => o.kind === 'Service' && o.metadata.name.endsWith('-claims'))).toBe(true);
  });

  it('reaches an external Redis with a password Secret, a CA Secret for rediss://, or through Sentinel, and so does the federation hub', async () => {
    const tls = await render([
      'controlPlane.redis.url=rediss://warmpool@cache.example:6380/1',
      'controlPlane.redis.passwordSecret.name=cache-auth',
      'controlPlane.redis.caSecret.name=cache-ca',
      'controlPlane.redis.caSecret.key=ca.pem',
      'controlPlane.federation.clusterId=east',
      'controlPlane.federation.redisUrl=rediss://hub.example:6380',
      'controlPlane.federation.redisPasswordSecret.name=hub-auth',
      'controlPlane.federation.redisCaSecret.name=hub-ca',
    ]);
    const deployment = find(tls, 'Deployment', '-control-plane');
    const args = containerOf(deployment, 'control-plane').args;
    for (const flag of [
      '--redis-url=rediss://warmpool@cache.example:6380/1',
      '--redis-password-file=/var/run/warmpool-redis/password',
      '--redis-ca-file=/var/run/warmpool-redis-ca/ca.crt',
      '--federation-redis-password-file=/var/run/warmpool-federation-redis/password',
      '--federation-redis-ca-file=/var/run/warmpool-federation-redis-ca/ca.crt',
    ]) {
      expect(args).toContain(flag);
    }
    expect(args.some((a) => a.startsWith('--redis-sentinel'))).toBe(false);
    const volumes = podOf(deployment).spec.volumes;
    for (const [name, secretName, key, path] of [
      ['redis-password', 'cache-auth', 'password', 'password'],
      ['redis-ca', 'cache-ca', 'ca.pem', 'ca.crt'],
      ['federation-redis-password', 'hub-auth', 'password', 'password'],
      ['federation-redis-ca', 'hub-ca', 'ca.crt', 'ca.crt'],
    ] as const) {
      expect(volumes).toContainEqual({ name, secret: { secretName, items: [{ key, path }] } });
    }
    expect(containerOf(deployment, 'control-plane')).toMatchObject({
      volumeMounts: expect.arrayContaining([
        { name: 'redis-password', mountPath: '/var/run/warmpool-redis', readOnly: true },
        { name: 'redis-ca', mountPath: '/var/run/warmpool-redis-ca', readOnly: true },
      ]) as unknown,
    });

    const sentinel = containerOf(
      find(
        await render([
          'controlPlane.redis.url=redis://warmpool/0',
          'controlPlane.redis.passwordSecret.name=redis-auth',
          'controlPlane.redis.sentinel.enabled=true',
          'controlPlane.redis.sentinel.hosts={sentinel-0.sentinel:26379,sentinel-1.sentinel:26379}',
          'controlPlane.redis.sentinel.masterName=warmpool',
          'controlPlane.redis.sentinel.passwordSecret.name=sentinel-auth',
        ]),
        'Deployment',
        '-control-plane',
      ),
      'control-plane',
    );
    expect(sentinel.args).toEqual(
      expect.arrayContaining([
        '--redis-url=redis://warmpool/0',
        '--redis-password-file=/var/run/warmpool-redis/password',
        '--redis-sentinels=sentinel-0.sentinel:26379,sentinel-1.sentinel:26379',
        '--redis-sentinel-master=warmpool',
        '--redis-sentinel-password-file=/var/run/warmpool-redis-sentinel/password',
      ]),
    );

    const sentinelOn = ['controlPlane.redis.sentinel.enabled=true'];
    await expect(render([...sentinelOn, 'controlPlane.redis.url=redis://m'])).rejects.toThrow(
      /sentinel.enabled needs sentinel.hosts .* and sentinel.masterName/,
    );
    await expect(
      render([
        ...sentinelOn,
        'redis.enabled=true',
        'controlPlane.redis.sentinel.hosts={s:26379}',
        'controlPlane.redis.sentinel.masterName=m',
      ]),
    ).rejects.toThrow(/sentinel.enabled needs controlPlane.redis.url/);
    await expect(render(['controlPlane.redis.sentinel.hosts={s}'])).rejects.toThrow(/sentinel\/hosts\/0/);
    await expect(
      render(['controlPlane.redis.url=redis://cache:6379', 'controlPlane.redis.caSecret.name=ca']),
    ).rejects.toThrow(/caSecret needs a rediss:\/\/ controlPlane.redis.url/);
    await expect(
      render([
        'controlPlane.federation.clusterId=east',
        'controlPlane.federation.redisUrl=redis://hub:6379',
        'controlPlane.federation.redisCaSecret.name=ca',
      ]),
    ).rejects.toThrow(/redisCaSecret needs a rediss:\/\/ controlPlane.federation.redisUrl/);
  });

  it('refuses Redis URLs the control plane cannot use (redis+sentinel://, other schemes) and Redis values of the wrong type', async () => {
    await expect(render(['controlPlane.redis.url=redis+sentinel://s:26379/mymaster'])).rejects.toThrow(
      /controlPlane\/redis\/url/,
    );
    await expect(render(['controlPlane.federation.redisUrl=http://hub'])).rejects.toThrow(/federation\/redisUrl/);
    await expect(render(['redis.enabled=true', 'redis.maxmemory=lots'])).rejects.toThrow(/redis\/maxmemory/);
    await expect(render(['redis.enabled=yes'])).rejects.toThrow(/redis\/enabled/);
    await expect(render(['redis.persistence=true'])).rejects.toThrow(/additional properties 'persistence' not allowed/);
  });

  it("the in-chart Redis's command line starts a real redis-server that demands its password and refuses to evict", async () => {
    const command = findOnPath('redis-server');
    if (command === undefined) throw new Error('redis-server not found on PATH (apt-get install -y redis-server)');
    const objects = await render(['redis.enabled=true']);
    const container = containerOf(find(objects, 'Deployment', '-redis'), 'redis');
    const password = Buffer.from(find(objects, 'Secret', '-redis').data?.password ?? '', 'base64').toString();
    const port = await freePort('127.0.0.1');
    const dir = mkdtempSync(join(tmpdir(), 'warmpool-chart-redis-'));
    // The chart's own arguments, $(REDIS_PASSWORD) expanded from the Secret as the kubelet does; only the port and
    // the data dir are this machine's, and it listens on loopback only.
    const args = container.args.map((a, i) =>
      container.args[i - 1] === '--port'
        ? String(port)
        : container.args[i - 1] === '--dir'
          ? dir
          : a.replace('$(REDIS_PASSWORD)', password),
    );
    const child = new ManagedChild({
      name: 'chart-redis',
      command,
      args: [...args, '--bind', '127.0.0.1'],
      logFile: join(dir, 'redis.log'),
      orphanCleanupDir: dir,
    });
    const client = new Redis(`redis://127.0.0.1:${port}`, { lazyConnect: true, maxRetriesPerRequest: 1, password });
    try {
      const ping = (): Promise<boolean> =>
        respCommand({ host: '127.0.0.1', port, password }, ['PING']).then(
          (reply) => reply === 'PONG',
          () => false,
        );
      await eventually(ping, {
        timeoutMs: 30_000,
        intervalMs: 100,
        what: () => `redis-server with the chart's args does not answer:\n${child.logTail()}`,
      });
      // Without the password nothing is answered; the password is not left in the process list.
      await expect(respCommand({ host: '127.0.0.1', port }, ['GET', 'k'])).resolves.toMatchObject({
        message: expect.stringMatching(/^NOAUTH/) as unknown,
      });
      expect(readFileSync(`/proc/${child.pid}/cmdline`, 'utf8')).not.toContain(password);
      await client.connect();
      expect(await client.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
      expect(await client.config('GET', 'save')).toEqual(['save', '']);
      expect(await client.config('GET', 'appendonly')).toEqual(['appendonly', 'yes']);
      expect(await client.config('GET', 'maxmemory')).toEqual(['maxmemory', String(192 * 1024 * 1024)]);
    } finally {
      client.disconnect();
      await child.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('opens the claim API to the sources in networkPolicy.claimsIngressFrom, /metrics only to metricsIngressFrom, keeps probes and the Sandbox API open, and admits only the control plane to the in-chart Redis', async () => {
    const policies = (set: string[]) =>
      render(['networkPolicy.enabled=true', ...set]).then((objects) =>
        objects
          .filter((o) => o.kind === 'NetworkPolicy')
          .map((o) => o.metadata.name)
          .sort(),
      );
    expect(await policies([])).toEqual(['warmpool-control-plane', 'warmpool-node-agent']);
    expect(await policies(['redis.enabled=true'])).toEqual([
      'warmpool-control-plane',
      'warmpool-node-agent',
      'warmpool-redis',
    ]);
    type Rule = { ports: Array<{ port: number }>; from?: unknown[] };
    const rulesOf = (objects: Rendered[]): Rule[] =>
      (loadYamlPlain(dumpYaml(find(objects, 'NetworkPolicy', '-control-plane'))) as { spec: { ingress: Rule[] } }).spec
        .ingress;
    const ruleFor = (rules: Rule[], port: number): Rule | undefined =>
      rules.find((r) => r.ports.some((p) => p.port === port));
    // By default: the claim API open to every client (it authenticates each call), /metrics only from namespaces
    // labelled metrics: enabled, the probes and the Sandbox API (kube-apiserver) open.
    const byDefault = rulesOf(await render(['networkPolicy.enabled=true', 'redis.enabled=true']));
    expect(ruleFor(byDefault, 8081)?.from).toBeUndefined();
    expect(ruleFor(byDefault, 8080)?.from).toEqual([{ namespaceSelector: { matchLabels: { metrics: 'enabled' } } }]);
    expect(ruleFor(byDefault, 9440)?.from).toBeUndefined();
    expect(ruleFor(byDefault, 8443)?.from).toBeUndefined();
    const objects = await render([
      'networkPolicy.enabled=true',
      'redis.enabled=true',
      'networkPolicy.claimsIngressFrom[0].namespaceSelector.matchLabels.team=sandboxes',
    ]);
    expect(ruleFor(rulesOf(objects), 8081)?.from).toEqual([
      { namespaceSelector: { matchLabels: { team: 'sandboxes' } } },
    ]);
    // The agents serve /metrics on their API port: the same scrapers reach it.
    expect(dumpYaml(find(objects, 'NetworkPolicy', '-node-agent'))).toMatch(/metrics: enabled/);
    const redis = dumpYaml(find(objects, 'NetworkPolicy', '-redis'));
    expect(redis).toMatch(
      /- from:\n\s+- podSelector:\n\s+matchLabels:\n\s+app\.kubernetes\.io\/instance: warmpool\n\s+app\.kubernetes\.io\/component: control-plane\n\s+ports:\n\s+- port: 6379/,
    );
  });

  it('refuses a cluster older than the supported Kubernetes version', async () => {
    await expect(
      helm(undefined, [
        'template',
        'warmpool',
        CHART,
        '--kube-version',
        '1.29.0',
        '--set',
        'fakeSandboxd.enabled=true',
      ]),
    ).rejects.toThrow(/kubeVersion/);
  });
});

describe('the Helm chart, installed on a real apiserver', () => {
  let cluster: TestCluster;
  const can = async (verb: string, resource: string, sa: string): Promise<boolean> => {
    const [name, subresource] = resource.split('/');
    const args = [
      'auth',
      'can-i',
      verb,
      name as string,
      `--as=system:serviceaccount:${NAMESPACE}:${sa}`,
      '-n',
      NAMESPACE,
    ];
    if (subresource) args.push(`--subresource=${subresource}`);
    const r = await cluster.kubectl(args);
    return r.stdout.trim() === 'yes';
  };

  beforeAll(async () => {
    cluster = await startCluster({ crds: false });
    await helmInstall(cluster, ['fakeSandboxd.enabled=true']);
  });
  afterAll(async () => cluster?.stop());

  it('installs every object, and the CRDs become Established', async () => {
    await cluster.waitForCrds(['crd', '-l', '!nonexistent', '--all'], 30_000);
    const names = (await cluster.kubectl(['get', 'crd', '-o', 'name'])).stdout;
    for (const plural of ['sandboxwarmpools', 'sandboxtemplates', 'sandboxclaims', 'nodeinventories', 'sandboxenvs']) {
      expect(names).toContain(plural);
    }
    expect(names).not.toContain('sandboxes.agents.x-k8s.io');
    expect((await cluster.kubectl(['get', 'apiservice', 'v1beta1.agents.x-k8s.io', '-o', 'name'])).stdout).toContain(
      'v1beta1.agents.x-k8s.io',
    );
    const workloads = await cluster.kubectl(['get', 'deploy,ds,secret', '-n', NAMESPACE, '-o', 'name']);
    expect(workloads.stdout).toContain('deployment.apps/warmpool-control-plane');
    expect(workloads.stdout).toContain('daemonset.apps/warmpool-node-agent');
    expect(workloads.stdout).toContain('secret/warmpool-fleet-token');
  });

  it('generates a fleet token once and keeps it across upgrades', async () => {
    const read = async () =>
      (
        await cluster.kubectl([
          'get',
          'secret',
          'warmpool-fleet-token',
          '-n',
          NAMESPACE,
          '-o',
          'jsonpath={.data.token}',
        ])
      ).stdout;
    const before = await read();
    expect(Buffer.from(before, 'base64').toString()).toMatch(/^[A-Za-z0-9]{48}$/);
    await helm(cluster, [
      'upgrade',
      'warmpool',
      CHART,
      '-n',
      NAMESPACE,
      '--wait=false',
      '--set',
      'fakeSandboxd.enabled=true',
    ]);
    expect(await read()).toBe(before);
  });

  it('lets a node agent publish inventories and read nodes, and nothing more', async () => {
    expect(await can('patch', 'nodeinventories.warmpool.dev', 'warmpool-node-agent')).toBe(true);
    expect(await can('create', 'nodeinventories.warmpool.dev', 'warmpool-node-agent')).toBe(true);
    expect(await can('get', 'nodes', 'warmpool-node-agent')).toBe(true);
    // Asked of whoever sets an owner reference where owner-reference permissions are enforced; the admission policy
    // pins it to the agent's own node's NodeInventory (node-agent-admission.test.ts).
    expect(await can('delete', 'nodeinventories.warmpool.dev', 'warmpool-node-agent')).toBe(true);
    expect(await can('list', 'sandboxwarmpools.extensions.agents.x-k8s.io', 'warmpool-node-agent')).toBe(false);
    expect(await can('get', 'secrets', 'warmpool-node-agent')).toBe(false);
    // Its status goes by server-side apply: a patch, nothing else.
    expect(await can('patch', 'nodeinventories.warmpool.dev/status', 'warmpool-node-agent')).toBe(true);
    expect(await can('create', 'nodeinventories.warmpool.dev/status', 'warmpool-node-agent')).toBe(false);
  });

  it('lets the control plane read intent, write pool status and its Lease, but never write pool specs', async () => {
    expect(await can('watch', 'sandboxwarmpools.extensions.agents.x-k8s.io', 'warmpool-control-plane')).toBe(true);
    expect(await can('patch', 'sandboxwarmpools.extensions.agents.x-k8s.io/status', 'warmpool-control-plane')).toBe(
      true,
    );
    expect(await can('watch', 'nodeinventories.warmpool.dev', 'warmpool-control-plane')).toBe(true);
    expect(await can('update', 'leases.coordination.k8s.io', 'warmpool-control-plane')).toBe(true);
    expect(await can('create', 'events', 'warmpool-control-plane')).toBe(true);
    expect(await can('watch', 'nodes', 'warmpool-control-plane')).toBe(true);
    expect(await can('watch', 'pods', 'warmpool-control-plane')).toBe(true);
    // The pool CRD by name, through an informer (list and watch with a metadata.name field selector).
    const canOnCrd = async (verb: string, name: string): Promise<boolean> =>
      (
        await cluster.kubectl([
          'auth',
          'can-i',
          verb,
          `customresourcedefinitions.apiextensions.k8s.io/${name}`,
          `--as=system:serviceaccount:${NAMESPACE}:warmpool-control-plane`,
        ])
      ).stdout.trim() === 'yes';
    expect(await canOnCrd('watch', 'sandboxwarmpools.extensions.agents.x-k8s.io')).toBe(true);
    expect(await canOnCrd('list', 'sandboxwarmpools.extensions.agents.x-k8s.io')).toBe(true);
    expect(await canOnCrd('watch', 'nodeinventories.warmpool.dev')).toBe(false);
    expect(await can('patch', 'nodes', 'warmpool-control-plane')).toBe(false);
    // Each verb is one the code uses: Env and autoscaler status are replaced (update), pool status applied (patch).
    expect(await can('update', 'sandboxenvs.warmpool.dev/status', 'warmpool-control-plane')).toBe(true);
    expect(await can('patch', 'sandboxenvs.warmpool.dev/status', 'warmpool-control-plane')).toBe(false);
    expect(await can('update', 'sandboxwarmpools.extensions.agents.x-k8s.io/status', 'warmpool-control-plane')).toBe(
      false,
    );
    expect(await can('patch', 'leases.coordination.k8s.io', 'warmpool-control-plane')).toBe(false);
    expect(await can('list', 'leases.coordination.k8s.io', 'warmpool-control-plane')).toBe(false);
    expect(await can('create', 'events.events.k8s.io', 'warmpool-control-plane')).toBe(false);
    expect(await can('patch', 'events', 'warmpool-control-plane')).toBe(false);
    expect(await can('get', 'pods', 'warmpool-control-plane')).toBe(false);
    // The pool autoscaler reads its objects and writes only their status.
    expect(await can('watch', 'sandboxwarmpoolautoscalers.warmpool.dev', 'warmpool-control-plane')).toBe(true);
    expect(await can('update', 'sandboxwarmpoolautoscalers.warmpool.dev/status', 'warmpool-control-plane')).toBe(true);
    expect(await can('patch', 'sandboxwarmpoolautoscalers.warmpool.dev/status', 'warmpool-control-plane')).toBe(false);
    expect(await can('patch', 'sandboxwarmpoolautoscalers.warmpool.dev', 'warmpool-control-plane')).toBe(false);
    // The SandboxEnv autoscaler moves replicas through the scale subresource only.
    expect(await can('patch', 'sandboxwarmpools.extensions.agents.x-k8s.io/scale', 'warmpool-control-plane')).toBe(
      true,
    );
    expect(await can('update', 'sandboxwarmpools.extensions.agents.x-k8s.io/scale', 'warmpool-control-plane')).toBe(
      false,
    );
    expect(await can('patch', 'sandboxwarmpools.extensions.agents.x-k8s.io', 'warmpool-control-plane')).toBe(false);
    expect(await can('delete', 'sandboxwarmpools.extensions.agents.x-k8s.io', 'warmpool-control-plane')).toBe(false);
  });

  it('lets the control plane answer SandboxClaims (status, finalizer, annotation, the token Secret by name) and no more', async () => {
    for (const verb of ['get', 'list', 'watch', 'patch', 'delete'])
      expect(await can(verb, 'sandboxclaims.extensions.agents.x-k8s.io', 'warmpool-control-plane'), verb).toBe(true);
    expect(await can('update', 'sandboxclaims.extensions.agents.x-k8s.io', 'warmpool-control-plane')).toBe(false);
    expect(await can('update', 'sandboxclaims.extensions.agents.x-k8s.io/status', 'warmpool-control-plane')).toBe(true);
    expect(await can('patch', 'sandboxclaims.extensions.agents.x-k8s.io/status', 'warmpool-control-plane')).toBe(false);
    expect(await can('update', 'sandboxclaims.extensions.agents.x-k8s.io/finalizers', 'warmpool-control-plane')).toBe(
      true,
    );
    for (const verb of ['get', 'create', 'update', 'delete'])
      expect(await can(verb, 'secrets', 'warmpool-control-plane'), verb).toBe(true);
    expect(await can('list', 'secrets', 'warmpool-control-plane')).toBe(false);
    expect(await can('watch', 'secrets', 'warmpool-control-plane')).toBe(false);
    expect(await can('create', 'sandboxclaims.extensions.agents.x-k8s.io', 'warmpool-control-plane')).toBe(false);
    expect(await can('create', 'sandboxes.agents.x-k8s.io', 'warmpool-control-plane')).toBe(false);
  });

  it("lists every kind under the category `warmpool`, and a pool's Reason column", async () => {
    const r = await cluster.kubectl(['api-resources', '--categories=warmpool', '-o', 'name']);
    expect(r.stdout.trim().split('\n').sort()).toEqual([
      'nodeinventories.warmpool.dev',
      'sandboxclaims.extensions.agents.x-k8s.io',
      'sandboxenvs.warmpool.dev',
      'sandboxtemplates.extensions.agents.x-k8s.io',
      'sandboxwarmpoolautoscalers.warmpool.dev',
      'sandboxwarmpools.extensions.agents.x-k8s.io',
    ]);
    // (sandboxes are served by the control plane behind the APIService, which no replica serves in this test.)
    const columns = (
      await cluster.kubectl([
        'get',
        'crd',
        'sandboxwarmpools.extensions.agents.x-k8s.io',
        '-o',
        'jsonpath={.spec.versions[0].additionalPrinterColumns[*].name}',
      ])
    ).stdout;
    expect(columns).toContain('Reason');
  });

  // A second release on the same test apiserver only to render these knobs for real; production runs one per cluster.
  it('installs with an existing token Secret under its own key, no CRDs, another namespace, NetworkPolicy and no PDB', async () => {
    const other = 'warmpool-two';
    expect((await cluster.kubectl(['create', 'namespace', other])).code).toBe(0);
    expect(
      (
        await cluster.kubectl([
          'create',
          'secret',
          'generic',
          'platform-token',
          '-n',
          other,
          '--from-literal=fleet=abc123',
        ])
      ).code,
    ).toBe(0);
    const notes = await helmInstall(
      cluster,
      [
        'crds.upstream.install=false',
        'crds.warmpool.install=false',
        'fleetToken.existingSecret=platform-token',
        'fleetToken.existingSecretKey=fleet',
        'networkPolicy.enabled=true',
        'controlPlane.replicas=1',
        // The APIService is cluster-wide: one release serves the Sandbox API.
        'sandboxApi.mode=crd',
      ],
      { release: 'second', namespace: other, createNamespace: false },
    );
    const objects = (await cluster.kubectl(['get', 'deploy,ds,secret,networkpolicy,pdb', '-n', other, '-o', 'name']))
      .stdout;
    expect(objects).toContain('deployment.apps/second-warmpool-control-plane');
    expect(objects).toContain('daemonset.apps/second-warmpool-node-agent');
    expect(objects).toContain('networkpolicy.networking.k8s.io/second-warmpool-node-agent');
    expect(objects).not.toContain('poddisruptionbudget');
    expect(objects).not.toContain('secret/second-warmpool-fleet-token');
    // NOTES rotate the token under the key the pods read, and say what no Redis means.
    expect(notes).toContain(`patch secret platform-token`);
    expect(notes).toContain(`'{"stringData":{"fleet":"<new token>"}}'`);
    expect(notes).toContain('SandboxWarmPoolAutoscalers are not\nacted on');
  });

  it('installs the claim API with the in-chart Redis and its NetworkPolicies: the apiserver accepts every object', async () => {
    const ns = 'warmpool-claims';
    const notes = await helmInstall(
      cluster,
      [
        'crds.upstream.install=false',
        'crds.warmpool.install=false',
        'fakeSandboxd.enabled=true',
        'controlPlane.replicas=1',
        'redis.enabled=true',
        'networkPolicy.enabled=true',
        'networkPolicy.claimsIngressFrom[0].namespaceSelector.matchLabels.team=sandboxes',
        'controlPlane.federation.clusterId=east',
        'sandboxApi.mode=crd',
      ],
      { release: 'claims', namespace: ns },
    );
    const objects = (await cluster.kubectl(['get', 'deploy,svc,networkpolicy', '-n', ns, '-o', 'name'])).stdout;
    for (const name of [
      'deployment.apps/claims-warmpool-redis',
      'service/claims-warmpool-redis',
      'service/claims-warmpool-claims',
      'networkpolicy.networking.k8s.io/claims-warmpool-redis',
      'networkpolicy.networking.k8s.io/claims-warmpool-control-plane',
      'networkpolicy.networking.k8s.io/claims-warmpool-node-agent',
    ]) {
      expect(objects).toContain(name);
    }
    const args = (
      await cluster.kubectl([
        'get',
        'deploy',
        'claims-warmpool-control-plane',
        '-n',
        ns,
        '-o',
        'jsonpath={.spec.template.spec.containers[0].args}',
      ])
    ).stdout;
    expect(args).toContain('--redis-url=redis://claims-warmpool-redis.warmpool-claims.svc:6379');
    expect(args).toContain('--redis-password-file=/var/run/warmpool-redis/password');
    expect(notes).toContain('claims-warmpool-claims, port 8081');
    expect(notes).toContain('It uses the in-chart Redis (claims-warmpool-redis): for trying out only');
  });

  it("generates the in-chart Redis's password once and keeps it across upgrades", async () => {
    const ns = 'warmpool-claims';
    const read = async (): Promise<string> =>
      (await cluster.kubectl(['get', 'secret', 'claims-warmpool-redis', '-n', ns, '-o', 'jsonpath={.data.password}']))
        .stdout;
    const before = await read();
    expect(Buffer.from(before, 'base64').toString()).toMatch(/^[A-Za-z0-9]{32}$/);
    await helm(cluster, ['upgrade', 'claims', CHART, '-n', ns, '--wait=false', '--reuse-values']);
    expect(await read()).toBe(before);
  });

  it('refuses values of the wrong type at install time, before anything is created', async () => {
    await expect(
      helmInstall(cluster, ['fakeSandboxd.enabled=true', 'controlPlane.replicas=two'], {
        release: 'bad',
        namespace: 'bad',
      }),
    ).rejects.toThrow(/replicas/);
    expect((await cluster.kubectl(['get', 'deploy', '-n', 'bad', '-o', 'name'])).stdout.trim()).toBe('');
  });

  it("lets the control plane review the claim API's callers (TokenReview, SubjectAccessReview)", async () => {
    expect(await can('create', 'tokenreviews.authentication.k8s.io', 'warmpool-control-plane')).toBe(true);
    expect(await can('create', 'subjectaccessreviews.authorization.k8s.io', 'warmpool-control-plane')).toBe(true);
  });

  it('lets the control plane read the front proxy settings in kube-system, as an extension apiserver', async () => {
    const r = await cluster.kubectl([
      'auth',
      'can-i',
      'get',
      'configmaps/extension-apiserver-authentication',
      '-n',
      'kube-system',
      `--as=system:serviceaccount:${NAMESPACE}:warmpool-control-plane`,
    ]);
    expect(r.stdout.trim()).toBe('yes');
    const other = await cluster.kubectl([
      'auth',
      'can-i',
      'get',
      'configmaps/kube-proxy',
      '-n',
      'kube-system',
      `--as=system:serviceaccount:${NAMESPACE}:warmpool-control-plane`,
    ]);
    expect(other.stdout.trim()).toBe('no');
  });
});
