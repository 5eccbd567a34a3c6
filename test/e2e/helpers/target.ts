// Where the e2e spec runs: the cluster named by WARMPOOL_E2E_KUBECONFIG (e.g.
// kind with `helm install … --set fakeSandboxd.enabled=true`), or else a local
// stack this process starts and tears down. The spec sees the same thing in
// both cases: a kubectl, the fleet token, and a namespace of its own.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NodeInventory } from '@warmpool/api';
import { runKubectl, startStack, type KubectlOptions, type KubectlResult, type LocalStack } from '@warmpool/harness';
import { portForward, type PortForward } from './port-forward.js';

export interface E2eTarget {
  /** "local stack" or the kubeconfig path. */
  readonly describe: string;
  /** The fleet token agents accept. */
  readonly token: string;
  /** A namespace created for this run. */
  readonly namespace: string;
  kubectl(args: string[], options?: KubectlOptions): Promise<KubectlResult>;
  /**
   * HOST:PORT where this process reaches the agent that publishes `inventory`.
   * On a cluster, a port-forward to the agent Pod on that node (never the pod
   * IP in spec.address); on the local stack, spec.address itself, which is a
   * loopback address there (no kubelet runs to tunnel through).
   */
  agentAddress(inventory: NodeInventory): Promise<string>;
  close(): Promise<void>;
}

/** Runs kubectl and fails with its output unless it exits 0. */
export async function kubectlOk(target: E2eTarget, args: string[], options?: KubectlOptions): Promise<string> {
  const result = await target.kubectl(args, options);
  if (result.code !== 0)
    throw new Error(`kubectl ${args.join(' ')} exited ${result.code}:\n${result.stderr}${result.stdout}`);
  return result.stdout;
}

async function createNamespace(kubectl: E2eTarget['kubectl']): Promise<string> {
  const namespace = `warmpool-e2e-${randomBytes(3).toString('hex')}`;
  const created = await kubectl(['create', 'namespace', namespace]);
  if (created.code !== 0) throw new Error(`cannot create namespace ${namespace}:\n${created.stderr}`);
  return namespace;
}

/**
 * The chart's fleet token: $WARMPOOL_E2E_TOKEN, else the Secret `<release>-fleet-token` the chart labels as warmpool's.
 */
async function clusterToken(kubectl: E2eTarget['kubectl']): Promise<string> {
  const fromEnv = process.env['WARMPOOL_E2E_TOKEN'];
  if (fromEnv) return fromEnv;
  const namespace = process.env['WARMPOOL_E2E_NAMESPACE'];
  const where = namespace ? ['-n', namespace] : ['-A'];
  const found = await kubectl(['get', 'secrets', ...where, '-l', 'app.kubernetes.io/name=warmpool', '-o', 'json']);
  if (found.code !== 0) throw new Error(`cannot list secrets for the fleet token:\n${found.stderr}`);
  const secrets = (
    JSON.parse(found.stdout) as { items: Array<{ metadata: { name: string }; data?: Record<string, string> }> }
  ).items;
  const secret = secrets.find((s) => s.metadata.name.endsWith('fleet-token') && s.data?.['token']);
  if (!secret?.data?.['token'])
    throw new Error('no fleet-token Secret found: set WARMPOOL_E2E_TOKEN or WARMPOOL_E2E_NAMESPACE');
  return Buffer.from(secret.data['token'], 'base64').toString('utf8').trim();
}

/** The node agent Pod on `node`: the chart's DaemonSet labels, in WARMPOOL_E2E_NAMESPACE or any namespace. */
async function agentPodOn(kubectl: E2eTarget['kubectl'], node: string): Promise<{ namespace: string; name: string }> {
  const namespace = process.env['WARMPOOL_E2E_NAMESPACE'];
  const where = namespace ? ['-n', namespace] : ['-A'];
  const found = await kubectl([
    'get',
    'pods',
    ...where,
    '-l',
    'app.kubernetes.io/name=warmpool,app.kubernetes.io/component=node-agent',
    '--field-selector',
    `spec.nodeName=${node},status.phase=Running`,
    '-o',
    'json',
  ]);
  if (found.code !== 0) throw new Error(`cannot list the node agent pods:\n${found.stderr}`);
  const pods = (JSON.parse(found.stdout) as { items: Array<{ metadata: { name: string; namespace: string } }> }).items;
  const pod = pods[0];
  if (!pod) throw new Error(`no running node agent Pod on node ${node}`);
  return { namespace: pod.metadata.namespace, name: pod.metadata.name };
}

function portOf(address: string): number {
  const port = Number(/:(\d+)$/.exec(address)?.[1]);
  if (!Number.isInteger(port) || port <= 0) throw new Error(`no port in the advertised address ${address}`);
  return port;
}

async function openCluster(kubeconfig: string): Promise<E2eTarget> {
  const cacheDir = mkdtempSync(join(tmpdir(), 'warmpool-e2e-kubectl-'));
  const kubectl = (args: string[], options?: KubectlOptions): Promise<KubectlResult> =>
    runKubectl(kubeconfig, cacheDir, args, options);
  const token = await clusterToken(kubectl);
  const namespace = await createNamespace(kubectl);
  const forwards = new Map<string, Promise<PortForward>>();
  return {
    describe: kubeconfig,
    token,
    namespace,
    kubectl,
    async agentAddress(inventory) {
      const node = inventory.spec.nodeName;
      let forward = forwards.get(node);
      if (!forward) {
        forward = agentPodOn(kubectl, node).then((pod) =>
          portForward(kubeconfig, pod.namespace, pod.name, portOf(inventory.spec.address)),
        );
        forwards.set(node, forward);
        forward.catch(() => forwards.delete(node));
      }
      return (await forward).address;
    },
    async close() {
      for (const forward of forwards.values())
        await forward.then(
          (f) => f.close(),
          () => undefined,
        );
      await kubectl(['delete', 'namespace', namespace, '--wait=false']);
      rmSync(cacheDir, { recursive: true, force: true });
    },
  };
}

/**
 * Its own loopback block (127.0.2.x), directory and ports, so it can run next
 * to `make up` and the stack test. A short interval keeps the spec quick; the
 * behaviour checked does not depend on it.
 */
async function openLocalStack(): Promise<E2eTarget> {
  const dir = mkdtempSync(join(tmpdir(), 'warmpool-e2e-stack-'));
  let stack: LocalStack;
  try {
    stack = await startStack({
      dir,
      loopbackPrefix: '127.0.2',
      controlPlanePort: 0,
      claimsPort: 0,
      interval: '1s',
      sample: false,
    });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const kubectl = (args: string[], options?: KubectlOptions): Promise<KubectlResult> =>
    stack.cluster.kubectl(args, options);
  const namespace = await createNamespace(kubectl);
  return {
    describe: 'local stack',
    token: stack.token,
    namespace,
    kubectl,
    agentAddress: (inventory) => Promise.resolve(inventory.spec.address),
    async close() {
      // No namespace controller runs here: the whole cluster goes instead.
      await stack.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function openTarget(): Promise<E2eTarget> {
  const kubeconfig = process.env['WARMPOOL_E2E_KUBECONFIG'];
  return kubeconfig ? openCluster(kubeconfig) : openLocalStack();
}
