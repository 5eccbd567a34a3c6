// The chart installed for real: three kubelets over containerd and runc (the
// harness's node cluster, all inside a network namespace of its own), the
// images built from this checkout, every pod scheduled, probed and Ready. One
// cluster and one release serve every case, in order; the last one uninstalls.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { NodeInventory } from '@warmpool/api';
import {
  CLUSTER_RANGES,
  eventually,
  listManifest,
  runCommand,
  runHelm,
  sandboxClaim,
  startNodeCluster,
  type NodeCluster,
  LOCAL_CHART_VALUES as VALUES,
} from '@warmpool/harness';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { info } from '../../../test/e2e/helpers/agent.js';
import { poolManifest } from '../../../test/e2e/helpers/objects.js';
import { portForward, type PortForward } from '../../../test/e2e/helpers/port-forward.js';
import { CHART, NAMESPACE, setArgs } from './support.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const IMAGES = `${ROOT}.local/images`;
const APPS = ['control-plane', 'node-agent', 'fake-sandboxd'];
const AGENT_PORT = 7071;
const LABEL = 'warmpool.dev/sandbox-node';
const CONVERGE_MS = 90_000;
/** How long the description of a failed wait may take (brief()). */
const BRIEF_MS = 10_000;

interface PodJson {
  metadata: { name: string; labels?: Record<string, string> };
  spec: { nodeName?: string; containers: Array<{ name: string; readinessProbe?: unknown }> };
  status: {
    podIP?: string;
    phase?: string;
    conditions?: Array<{ type: string; status: string }>;
    containerStatuses?: Array<{
      name: string;
      ready: boolean;
      restartCount?: number;
      lastState?: { terminated?: { reason?: string; exitCode?: number } };
    }>;
  };
}

describe('the chart on real nodes (kubelet, containerd, runc)', () => {
  let cluster: NodeCluster;
  const forwards: PortForward[] = [];
  const pool = 'pods-pool';
  const image = `registry.example/warmpool-pods/${randomBytes(4).toString('hex')}:1`;
  const poolNamespace = 'pods-spec';

  async function kubectlOk(args: string[], input?: string): Promise<string> {
    const result = await cluster.kubectl(args, input === undefined ? {} : { input });
    if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}${result.stdout}`);
    return result.stdout;
  }

  async function pods(selector = 'app.kubernetes.io/name=warmpool'): Promise<PodJson[]> {
    const out = await kubectlOk(['get', 'pods', '-n', NAMESPACE, '-l', selector, '-o', 'json']);
    return (JSON.parse(out) as { items: PodJson[] }).items;
  }

  const agentPods = (): Promise<PodJson[]> => pods('app.kubernetes.io/component=node-agent');
  const ready = (pod: PodJson): boolean =>
    pod.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

  async function inventories(): Promise<NodeInventory[]> {
    return (JSON.parse(await kubectlOk(['get', 'nodeinventories', '-o', 'json'])) as { items: NodeInventory[] }).items;
  }

  async function fleetToken(): Promise<string> {
    const b64 = await kubectlOk([
      'get',
      'secret',
      'warmpool-fleet-token',
      '-n',
      NAMESPACE,
      '-o',
      'jsonpath={.data.token}',
    ]);
    return Buffer.from(b64, 'base64').toString('utf8').trim();
  }

  /**
   * What the cluster looked like, in one line per pod plus the pool's and the claims' status: appended to a timed-out
   * wait's error, so the failure itself says what the cluster was doing (a CI log may keep only its last lines). Its
   * reads run side by side, each cut short after BRIEF_MS, so a hung apiserver costs BRIEF_MS, not the harness's
   * 60 s per kubectl call, and never outlasts the spec's own timeout (which would drop the original error).
   */
  async function brief(): Promise<string> {
    const quick = (args: string[]): Promise<string> =>
      cluster
        .kubectl([`--request-timeout=${BRIEF_MS / 1000}s`, ...args], { timeoutMs: BRIEF_MS + 2_000 })
        .then((out) => {
          if (out.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${out.stderr.trim() || `exit ${out.code}`}`);
          return out.stdout;
        });
    const podLines = async (): Promise<string[]> => {
      const out = await quick(['get', 'pods', '-n', NAMESPACE, '-l', 'app.kubernetes.io/name=warmpool', '-o', 'json']);
      return (JSON.parse(out) as { items: PodJson[] }).items.map((pod) => {
        const containers = (pod.status.containerStatuses ?? []).map((c) => {
          const last = c.lastState?.terminated;
          return `${c.name}:${c.ready ? 'ready' : 'not-ready'}/restarts=${c.restartCount ?? 0}${last ? `/last=${last.reason ?? ''}(${last.exitCode ?? ''})` : ''}`;
        });
        return `${pod.metadata.name}@${pod.spec.nodeName ?? '-'} ${pod.status.phase ?? ''} ${containers.join(' ')}`;
      });
    };
    const leaseLine = async (): Promise<string[]> => [
      `leases: ${await quick([
        'get',
        'lease',
        '-n',
        NAMESPACE,
        '-o',
        'jsonpath={range .items[*]}{.metadata.name}={.spec.holderIdentity} {end}',
      ])}`,
    ];
    const statusLines = async (kind: string): Promise<string[]> => {
      const out = await quick(['get', kind, '-n', poolNamespace, '-o', 'json']);
      return (JSON.parse(out) as { items: Array<{ metadata: { name: string }; status?: unknown }> }).items.map(
        (item) => `${kind}/${item.metadata.name} status=${JSON.stringify(item.status ?? {})}`,
      );
    };
    const parts = await Promise.allSettled([podLines(), leaseLine(), statusLines('swp'), statusLines('sandboxclaims')]);
    return parts
      .flatMap((part) => (part.status === 'fulfilled' ? part.value : [`(no answer: ${String(part.reason)})`]))
      .join('\n    ');
  }

  /** `wait`, and when it fails, the same error with what the cluster looked like. */
  async function described<T>(wait: () => Promise<T>): Promise<T> {
    try {
      return await wait();
    } catch (err) {
      throw new Error(
        `${err instanceof Error ? err.message : String(err)}\n  the cluster then:\n    ${await brief()}`,
        {
          cause: err,
        },
      );
    }
  }

  /** A SandboxClaim Ready within the convergence time (kubectl wait's own default is 30 s). */
  async function expectClaimReady(name: string): Promise<void> {
    await described(() =>
      kubectlOk([
        'wait',
        '--for=condition=Ready',
        `sandboxclaim/${name}`,
        '-n',
        poolNamespace,
        `--timeout=${CONVERGE_MS / 1000}s`,
      ]),
    );
  }

  async function expectPoolReady(replicas: number): Promise<void> {
    await described(() =>
      eventually(
        async () => {
          const out = await kubectlOk([
            'get',
            'swp',
            pool,
            '-n',
            poolNamespace,
            '-o',
            'jsonpath={.status.readyReplicas}',
          ]);
          return out === String(replicas);
        },
        { timeoutMs: CONVERGE_MS, intervalMs: 500, what: `${pool} READY = ${replicas}` },
      ),
    );
  }

  async function forwardTo(pod: string, port: number, kind: 'pod' | 'svc' = 'pod'): Promise<string> {
    const forward = await portForward(cluster.kubeconfigPath, NAMESPACE, pod, port, kind);
    forwards.push(forward);
    return forward.address;
  }

  beforeAll(async () => {
    // Cached: rebuilt only when an image's files changed.
    execFileSync(`${ROOT}images/build.sh`, [...APPS, 'pause', 'redis'], { stdio: ['ignore', 'ignore', 'inherit'] });
    cluster = await startNodeCluster({
      nodes: 3,
      images: [...APPS, 'redis'].map((app) => `${IMAGES}/${app}.oci.tar`),
      pauseImage: `${IMAGES}/pause.oci.tar`,
      // node-1 is no sandbox node: the DaemonSet must leave it alone.
      nodeLabels: (index): Record<string, string> => (index === 1 ? {} : { [LABEL]: 'true' }),
    });
    await runHelm(
      [
        'install',
        'warmpool',
        CHART,
        '-n',
        NAMESPACE,
        '--create-namespace',
        ...setArgs(VALUES),
        '--wait',
        '--timeout=4m',
      ],
      { kubeconfigPath: cluster.kubeconfigPath },
    );
  }, 900_000);

  // A failed spec leaves what the cluster said on the output: its pods, their recent logs and the events.
  afterEach(async ({ task }) => {
    if (task.result?.state !== 'fail' || cluster === undefined) return;
    const said: string[] = [];
    for (const args of [
      ['get', 'pods', '-A', '-o', 'wide'],
      ['get', 'events', '-A', '--sort-by=.lastTimestamp'],
      ['logs', '-n', NAMESPACE, '-l', 'app.kubernetes.io/name=warmpool', '--all-containers', '--prefix', '--tail=200'],
    ]) {
      const result = await cluster
        .kubectl(args)
        .catch((err: unknown) => ({ code: -1, stdout: '', stderr: String(err) }));
      said.push(`$ kubectl ${args.join(' ')}\n${result.stdout}${result.stderr}`);
    }
    console.error(`what the cluster said when "${task.name}" failed:\n${said.join('\n')}`);
  }, 60_000);

  afterAll(async () => {
    for (const forward of forwards) await forward.close();
    await cluster?.close();
  }, 120_000);

  it("keeps every cluster address off the host's routes: nothing can leave through the default gateway", () => {
    const samples = { nodes: '10.200.0.11', pods: '10.244.2.2', services: '10.96.0.1' } as const;
    for (const [range, address] of Object.entries(samples)) {
      expect(CLUSTER_RANGES[range as keyof typeof CLUSTER_RANGES]).toBeDefined();
      let answer: string;
      try {
        answer = execFileSync('ip', ['route', 'get', address], { encoding: 'utf8', stdio: 'pipe' });
      } catch (error) {
        answer = String((error as { stderr?: unknown }).stderr ?? error);
      }
      expect(answer, `${range} (${address}) from the host`).toMatch(/unreachable|No route to host/);
      expect(answer).not.toMatch(/ via /);
    }
    expect(cluster.inside('ip', ['route', 'show', 'default']).trim(), 'the namespace has no default route').toBe('');
  });

  it('runs every pod Ready through its probes, the DaemonSet only on the labelled nodes', async () => {
    // helm --wait saw each workload available; a just-started agent turns Ready once its sandboxd answers.
    const all = await eventually(
      async () => {
        const listed = await pods();
        return listed.every(ready) ? listed : undefined;
      },
      { timeoutMs: CONVERGE_MS, intervalMs: 500, what: 'every warmpool pod Ready' },
    );
    expect(all.length).toBeGreaterThanOrEqual(5); // 2 control planes, 2 agents, Redis
    for (const pod of all) {
      for (const container of pod.spec.containers)
        // The demo sidecar has none: the agent beside it is not Ready while its sandboxd does not answer.
        if (container.name !== 'fake-sandboxd')
          expect(
            container.readinessProbe,
            `${pod.metadata.name}/${container.name} has a readiness probe`,
          ).toBeDefined();
    }
    const agentNodes = (await agentPods()).map((pod) => pod.spec.nodeName).sort();
    expect(agentNodes).toEqual(['node-2', 'node-3']);
  });

  it('drives a SandboxWarmPool onto the agents at their Pod addresses', async () => {
    await kubectlOk(['create', 'namespace', poolNamespace]);
    await kubectlOk(['apply', '-f', '-'], poolManifest(poolNamespace, pool, image, 6));
    await expectPoolReady(6);
    const agents = await agentPods();
    const byNode = new Map((await inventories()).map((inv) => [inv.spec.nodeName, inv.spec.address]));
    for (const agent of agents)
      expect(byNode.get(agent.spec.nodeName ?? ''), `inventory of ${agent.spec.nodeName}`).toBe(
        `${agent.status.podIP}:${AGENT_PORT}`,
      );
    // A fresh install judges no inventory before its agent's first write.
    const leaderLogs = await kubectlOk(['logs', '-n', NAMESPACE, '-l', 'app.kubernetes.io/component=control-plane']);
    expect(leaderLogs).not.toContain('node out of placement');
  });

  it('passes test/e2e, reaching the agents through kubectl port-forward', { timeout: 600_000 }, async () => {
    const result = await runCommand({
      command: process.execPath,
      args: [`${ROOT}node_modules/vitest/vitest.mjs`, 'run', 'test/e2e'],
      cwd: ROOT,
      env: {
        ...process.env,
        WARMPOOL_E2E_KUBECONFIG: cluster.kubeconfigPath,
        WARMPOOL_E2E_NAMESPACE: NAMESPACE,
        WARMPOOL_E2E_CLAIMS: '1',
      },
      timeoutMs: 540_000,
    });
    expect(result.code, `${result.stdout.slice(-4000)}\n${result.stderr.slice(-4000)}`).toBe(0);
  });

  it('serves a SandboxClaim, and an HTTP claim through the claims Service', { timeout: 120_000 }, async () => {
    await kubectlOk(['apply', '-f', '-'], listManifest(sandboxClaim(poolNamespace, 'pods-claim', pool)));
    await expectClaimReady('pods-claim');
    await kubectlOk(['create', 'serviceaccount', 'claimer', '-n', poolNamespace]);
    await kubectlOk([
      'create',
      'role',
      'claimer',
      '-n',
      poolNamespace,
      '--verb=create,get,update,delete',
      '--resource=sandboxclaims.extensions.agents.x-k8s.io',
    ]);
    await kubectlOk([
      'create',
      'rolebinding',
      'claimer',
      '-n',
      poolNamespace,
      '--role=claimer',
      `--serviceaccount=${poolNamespace}:claimer`,
    ]);
    const token = (await kubectlOk(['create', 'token', 'claimer', '-n', poolNamespace])).trim();
    const claims = await forwardTo('warmpool-claims', 8081, 'svc');
    const answer = await eventually(
      async () => {
        const res = await fetch(`http://${claims}/v1/namespaces/${poolNamespace}/claims`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ warmPool: pool, ttlSeconds: 60 }),
        });
        return res.ok ? ((await res.json()) as Record<string, unknown>) : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 500, what: 'an HTTP claim' },
    );
    expect(answer).toMatchObject({ id: expect.stringMatching(/^sb_/) });
  });

  it('rotates the fleet token: every pod picks it up and nobody is refused', { timeout: 240_000 }, async () => {
    const next = randomBytes(24).toString('hex');
    await kubectlOk([
      'patch',
      'secret',
      'warmpool-fleet-token',
      '-n',
      NAMESPACE,
      '--type=merge',
      '-p',
      JSON.stringify({ data: { token: Buffer.from(next).toString('base64') } }),
    ]);
    expect(await fleetToken()).toBe(next);
    // Every container that mounts the token sees the new one (kubelet refreshes Secret volumes at its pod sync).
    const holders = (await pods()).filter((pod) => pod.metadata.labels?.['app.kubernetes.io/component'] !== 'redis');
    for (const pod of holders)
      for (const container of pod.spec.containers)
        await eventually(
          async () =>
            (
              await cluster.kubectl([
                'exec',
                '-n',
                NAMESPACE,
                pod.metadata.name,
                '-c',
                container.name,
                '--',
                '/usr/local/bin/node',
                '-p',
                "require('fs').readFileSync('/var/run/warmpool/token', 'utf8').trim()",
              ])
            ).stdout.trim() === next,
          { timeoutMs: 150_000, intervalMs: 2000, what: `${pod.metadata.name}/${container.name} to see the new token` },
        );
    const addresses = await Promise.all((await agentPods()).map((agent) => forwardTo(agent.metadata.name, AGENT_PORT)));
    // Each process re-reads its file within 10 s.
    for (const address of addresses)
      await eventually(async () => (await info(address, next)) !== undefined, {
        timeoutMs: 30_000,
        intervalMs: 1000,
        what: `the agent at ${address} to take the new token`,
      });
    // The control plane pushes with the new token too: a new target reaches every node.
    await kubectlOk(['scale', 'swp', pool, '-n', poolNamespace, '--replicas=8']);
    await expectPoolReady(8);
    for (const address of addresses) {
      const refused = (await (await fetch(`http://${address}/metrics`)).text())
        .split('\n')
        .filter((line) => line.includes('status="401"') && !line.includes('method="GET"'));
      // This spec's own GET /v1/info probes may race the re-read; no push or claim may be refused.
      expect(refused, `calls refused by the agent at ${address}`).toEqual([]);
    }
  });

  it("replaces a deleted node agent Pod, and the DaemonSet's new one re-joins", { timeout: 180_000 }, async () => {
    const old = (await agentPods()).find((pod) => pod.spec.nodeName === 'node-2');
    expect(old).toBeDefined();
    await kubectlOk(['delete', 'pod', '-n', NAMESPACE, old?.metadata.name ?? '', '--wait=true']);
    const replacement = await eventually(
      async () =>
        (await agentPods()).find(
          (pod) => pod.spec.nodeName === 'node-2' && pod.metadata.name !== old?.metadata.name && ready(pod),
        ),
      { timeoutMs: CONVERGE_MS, intervalMs: 500, what: 'a Ready replacement agent on node-2' },
    );
    await eventually(
      async () =>
        (await inventories()).find((inv) => inv.spec.nodeName === 'node-2')?.spec.address ===
        `${replacement.status.podIP}:${AGENT_PORT}`,
      { timeoutMs: CONVERGE_MS, intervalMs: 500, what: "node-2's inventory at the new Pod's address" },
    );
    await kubectlOk(['scale', 'swp', pool, '-n', poolNamespace, '--replicas=10']);
    await expectPoolReady(10);
  });

  it('upgrades in place with helm upgrade', { timeout: 360_000 }, async () => {
    await runHelm(
      ['upgrade', 'warmpool', CHART, '-n', NAMESPACE, '--reuse-values', '--set', 'controlPlane.interval=3s', '--wait'],
      { kubeconfigPath: cluster.kubeconfigPath, timeoutMs: 300_000 },
    );
    // The replaced pods terminate after the new ones are Ready.
    await described(() =>
      eventually(async () => (await pods()).every(ready), {
        timeoutMs: CONVERGE_MS,
        intervalMs: 1000,
        what: 'only Ready pods after the upgrade',
      }),
    );
    await expectPoolReady(10);
  });

  it('uninstalls with nothing left behind: no claim stuck, no NodeInventory', { timeout: 360_000 }, async () => {
    await kubectlOk(['apply', '-f', '-'], listManifest(sandboxClaim(poolNamespace, 'held-at-uninstall', pool)));
    await expectClaimReady('held-at-uninstall');
    await runHelm(['uninstall', 'warmpool', '-n', NAMESPACE, '--wait', '--timeout=4m'], {
      kubeconfigPath: cluster.kubeconfigPath,
      timeoutMs: 300_000,
    });
    expect(await kubectlOk(['get', 'sandboxclaims', '-A', '-o', 'name'])).toBe('');
    expect(await inventories()).toEqual([]);
    // Pods terminate after their workloads are gone (the agents' drain takes seconds).
    await eventually(
      async () =>
        !/warmpool/.test(
          await kubectlOk(['get', 'pods,jobs,services,configmaps,secrets', '-n', NAMESPACE, '-o', 'name']),
        ),
      { timeoutMs: CONVERGE_MS, intervalMs: 1000, what: `nothing of the release left in ${NAMESPACE}` },
    );

    // Nothing holds a finalizer: both namespaces go.
    await kubectlOk(['delete', 'namespace', poolNamespace, '--timeout=90s']);
    expect(cluster.unexpectedExits(), 'every component of the cluster still runs').toEqual([]);
  });
});
