#!/usr/bin/env node
// `make cluster`: the chart on real nodes without Docker. Three kubelets over
// containerd and runc in a network namespace of their own (node-cluster.ts),
// the images built from this checkout, `helm install` with the fake sandboxd
// and the in-chart Redis, a sample pool; then how to use it, until Ctrl-C
// tears everything down and puts the machine back as it was.
import { LOCAL_CHART_VALUES as VALUES } from './configs.js';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { messageOf } from '@warmpool/runtime';
import { leaveSignalsToCaller } from '../children.js';
import { runHelm } from '../helm.js';
import { sampleManifest } from '../stack-manifests.js';
import { REPO_ROOT } from '../stack-apps.js';
import { startNodeCluster, type NodeCluster } from './node-cluster.js';

const HELP = `Usage: node test/harness/dist/nodes/cluster-main.js [flags]

Runs a Kubernetes cluster with real nodes on this machine (kubelet, containerd,
runc; no Docker), installs charts/warmpool from the images in .local/images
(make images) and prints how to use it. Ctrl-C removes everything.

Flags:
  --dir <path>         where kubeconfig and token go (default .local/cluster)
  --replicas <n>       replicas of the sample SandboxWarmPool (default 20; 0 = no sample)
  --help               show this help
`;

const NAMESPACE = 'warmpool-system';
const SAMPLE_NAMESPACE = 'default';
const IMAGES = join(REPO_ROOT, '.local', 'images');
const APPS = ['control-plane', 'node-agent', 'fake-sandboxd'];

function guide(cluster: NodeCluster, dir: string, replicas: number, startupMs: number): string {
  const kubeconfig = join(dir, 'kubeconfig');
  const shown = relative(process.cwd(), kubeconfig).startsWith('..')
    ? kubeconfig
    : `$PWD/${relative(process.cwd(), kubeconfig)}`;
  const token = `$(cat ${relative(process.cwd(), join(dir, 'token'))})`;
  return [
    '',
    `warmpool is installed on a cluster with real nodes (${(startupMs / 1000).toFixed(1)} s)`,
    '',
    `  kubeconfig     ${shown}  (admin of ${cluster.server}, a relay into the cluster's network namespace ${cluster.netns})`,
    `  nodes          ${cluster.nodeNames.join(', ')} (node-2 and node-3 are labelled warmpool.dev/sandbox-node=true: the agents run there)`,
    `  release        warmpool in ${NAMESPACE} (fakeSandboxd.enabled=true, redis.enabled=true)`,
    `  logs           ${cluster.logDir}/<component>.log; pods: kubectl logs`,
    ...(replicas > 0 ? [`  sample         SandboxWarmPool ${SAMPLE_NAMESPACE}/python, ${replicas} replicas`] : []),
    '',
    'In another shell, from this directory:',
    '  export PATH=$HOME/.cache/warmpool/bin:$PATH     # kubectl and helm as the cluster runs them',
    `  export KUBECONFIG=${shown}`,
    '  kubectl get pods -A -o wide',
    '  kubectl get swp,nodeinventories',
    ...(replicas > 0 ? ['  kubectl scale swp python --replicas=40'] : []),
    `  kubectl port-forward -n ${NAMESPACE} ds/warmpool-node-agent 7071 &`,
    `  curl -H "Authorization: Bearer ${token}" http://127.0.0.1:7071/v1/info`,
    `  kubectl port-forward -n ${NAMESPACE} svc/warmpool-claims 8081 &`,
    '  kubectl create serviceaccount claimer',
    '  kubectl create role claimer --verb=create,get,update,delete --resource=sandboxclaims.extensions.agents.x-k8s.io',
    '  kubectl create rolebinding claimer --role=claimer --serviceaccount=default:claimer',
    `  curl -X POST -H "Authorization: Bearer $(kubectl create token claimer)" -H 'content-type: application/json' -d '{"warmPool":"python","ttlSeconds":60}' http://127.0.0.1:8081/v1/namespaces/default/claims`,
    `  helm uninstall warmpool -n ${NAMESPACE}   # releases every SandboxClaim first (the chart README, "Uninstall")`,
    '',
    'Ctrl-C stops the cluster and restores the machine.',
    '',
  ].join('\n');
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    strict: true,
    options: { dir: { type: 'string' }, replicas: { type: 'string' }, help: { type: 'boolean' } },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const replicas = Number(values.replicas ?? '20');
  if (!Number.isInteger(replicas) || replicas < 0) throw new Error(`--replicas must be an integer ≥ 0`);
  const dir = values.dir ?? join(REPO_ROOT, '.local', 'cluster');
  mkdirSync(dir, { recursive: true });

  leaveSignalsToCaller();
  const started = performance.now();
  console.log('==> starting 3 nodes (kubelet, containerd, runc) and the control plane');
  const cluster = await startNodeCluster({
    nodes: 3,
    images: [...APPS, 'redis'].map((app) => join(IMAGES, `${app}.oci.tar`)),
    pauseImage: join(IMAGES, 'pause.oci.tar'),
    nodeLabels: (index): Record<string, string> => (index === 1 ? {} : { 'warmpool.dev/sandbox-node': 'true' }),
  });
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => (stopping ??= cluster.close());
  const signalled = new Promise<NodeJS.Signals>((resolve) => {
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, () => resolve(signal));
  });
  try {
    console.log(`==> cluster up in ${(cluster.timings.totalMs / 1000).toFixed(1)} s; helm install`);
    await runHelm(
      ['install', 'warmpool', join(REPO_ROOT, 'charts', 'warmpool'), '-n', NAMESPACE, '--create-namespace']
        .concat(VALUES.flatMap((v) => ['--set', v]))
        .concat(['--wait', '--timeout=5m']),
      { kubeconfigPath: cluster.kubeconfigPath },
    );
    if (replicas > 0) {
      const applied = await cluster.kubectl(['apply', '-f', '-'], {
        input: sampleManifest({ namespace: SAMPLE_NAMESPACE, replicas }),
      });
      if (applied.code !== 0) throw new Error(`applying the sample: ${applied.stderr}`);
    }
    const token = await cluster.kubectl([
      'get',
      'secret',
      'warmpool-fleet-token',
      '-n',
      NAMESPACE,
      '-o',
      'jsonpath={.data.token}',
    ]);
    writeFileSync(join(dir, 'token'), Buffer.from(token.stdout, 'base64').toString('utf8'), { mode: 0o600 });
    copyFileSync(cluster.kubeconfigPath, join(dir, 'kubeconfig'));
    console.log(guide(cluster, dir, replicas, performance.now() - started));
    // The cluster's children and relay do not hold the process open (a test's would not end otherwise): this does.
    const keepAlive = setInterval(() => undefined, 3_600_000);
    const signal = await signalled;
    clearInterval(keepAlive);
    console.log(`\n${signal}: stopping the cluster`);
    await stop();
    console.log('stopped; the machine is as it was');
    return 0;
  } catch (error) {
    console.error(`cluster-main: ${messageOf(error)}\nlogs: ${cluster.logDir}`);
    await stop();
    return 1;
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`cluster-main: ${(error as Error).stack ?? String(error)}`);
    process.exit(1);
  },
);
