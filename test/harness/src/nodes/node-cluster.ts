// A Kubernetes cluster with real nodes on this machine, for specs that run
// warmpool as pods: kubelets over containerd and runc, the control plane with
// controller-manager, scheduler, kube-proxy and CoreDNS, all inside one network
// namespace the harness creates. The host reaches the apiserver through a
// relay on 127.0.0.1 only; pods, Services and nodes are addressable nowhere
// outside the namespace.
//
// Everything the cluster changes on the machine is written down first
// (machine-state.ts) and undone by close(), by a detached guardian if the
// owner dies without closing, or by the next start.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { ensureNodeBinaries } from '../binaries.js';
import type { ManagedChild } from '../children.js';
import { kubeconfigYaml, writeKubeconfig } from '../kubeconfig.js';
import { runKubectl, type KubectlOptions, type KubectlResult } from '../kubectl.js';
import { eventually } from '../wait.js';
import { addHostRoutes, cleanUpCluster, reapDeadClusters } from './cleanup.js';
import {
  startApiserverInside,
  startControllerManager,
  startCoreDns,
  startEtcdInside,
  startKubeProxy,
  startScheduler,
  writeControlPlaneFiles,
} from './control-plane.js';
import {
  clusterStates,
  processStart,
  recordMachine,
  STATE_DIR,
  stateFile,
  writeClusterState,
  type ClusterState,
} from './machine-state.js';
import { createClusterNamespace, type ClusterNamespace } from './namespace.js';
import { imageSeed } from './image-seed.js';
import { createCgroupRoot, nodePaths, startContainerd, startKubelet, type StartedNode } from './node.js';
import { createNodeClusterPki, type NodeClusterPki } from './node-pki.js';
import { startRelay, type Relay } from './relay.js';
import { APISERVER_PORT, MAX_NODES, nodeAddresses } from './topology.js';

const GUARDIAN = fileURLToPath(new URL('../../dist/nodes/guardian-main.js', import.meta.url));

export interface StartNodeClusterOptions {
  /** 1 to 3 (default 3). */
  nodes?: number;
  /** Labels of node `index` (1-based) besides kubelet's own. */
  nodeLabels?: (index: number) => Record<string, string>;
  /** OCI archives (`images/build.sh` output) imported into every node; the pause image always is. */
  images: string[];
  /** The pause image's archive. */
  pauseImage: string;
  /** The host port of the apiserver relay (0 or absent: any free one). */
  apiserverPort?: number;
}

export interface NodeClusterTimings {
  /** Namespace, certificates, etcd, apiserver: until /readyz through the relay. */
  controlPlaneMs: number;
  /** Until every node is Ready and the default ServiceAccount exists. */
  totalMs: number;
}

export interface NodeCluster {
  readonly id: string;
  /** https://127.0.0.1:<port>: the relay into the namespace. */
  readonly server: string;
  readonly kubeconfigPath: string;
  readonly kubeConfig: KubeConfig;
  readonly dataDir: string;
  readonly logDir: string;
  readonly netns: string;
  readonly nodeNames: string[];
  readonly timings: NodeClusterTimings;
  kubectl(args: string[], options?: KubectlOptions): Promise<KubectlResult>;
  /** Components (etcd, kubelets, containerd, ...) that exited while the cluster ran, with their logs' tails. */
  unexpectedExits(): string[];
  /** Runs a program inside the cluster's network namespace (for probes of pod addresses). */
  inside(command: string, args: string[]): string;
  close(): Promise<void>;
}

function spawnGuardian(state: ClusterState): { pid: number; start: string } {
  const log = openSync(join(STATE_DIR, `${state.id}.guardian.log`), 'a');
  const child = spawn(process.execPath, [GUARDIAN, stateFile(state.id)], {
    detached: true,
    stdio: ['ignore', log, log],
  });
  child.unref();
  const pid = child.pid ?? 0;
  return { pid, start: processStart(pid) ?? '' };
}

class RunningNodeCluster implements NodeCluster {
  readonly id: string;
  readonly server: string;
  readonly kubeconfigPath: string;
  readonly kubeConfig = new KubeConfig();
  readonly dataDir: string;
  readonly logDir: string;
  readonly netns: string;
  readonly nodeNames: string[] = [];
  readonly timings: NodeClusterTimings = { controlPlaneMs: 0, totalMs: 0 };
  readonly children: ManagedChild[] = [];
  readonly nodes: StartedNode[] = [];
  readonly state: ClusterState;
  readonly ns: ClusterNamespace;
  readonly pki: NodeClusterPki;
  relay: Relay | undefined;
  #closed = false;

  constructor(state: ClusterState, ns: ClusterNamespace, pki: NodeClusterPki, relay: Relay) {
    this.state = state;
    this.ns = ns;
    this.pki = pki;
    this.id = state.id;
    this.dataDir = state.dataDir;
    this.logDir = join(state.dataDir, 'logs');
    this.netns = state.netns;
    this.relay = relay;
    this.server = `https://${relay.address}`;
    this.kubeconfigPath = writeKubeconfig(
      join(this.dataDir, 'kubeconfig'),
      kubeconfigYaml({
        name: `warmpool-nodes-${state.id}`,
        server: this.server,
        caPem: pki.ca.certPem,
        userName: 'admin',
        user: { clientCertPem: pki.admin.certPem, clientKeyPem: pki.admin.keyPem },
      }),
    );
    this.kubeConfig.loadFromFile(this.kubeconfigPath);
  }

  kubectl(args: string[], options?: KubectlOptions): Promise<KubectlResult> {
    return runKubectl(this.kubeconfigPath, join(this.dataDir, 'kubectl-cache'), args, options);
  }

  inside(command: string, args: string[]): string {
    return this.ns.run(command, args);
  }

  unexpectedExits(): string[] {
    if (this.#closed) return [];
    return [...this.children, ...this.nodes.flatMap((node) => (node.kubelet ? [node.kubelet] : []))]
      .filter((child) => !child.running)
      .map((child) => `${child.name} exited (${JSON.stringify(child.exitStatus)}):\n${child.logTail(10)}`);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // The children are unref'd: without this, a program whose only work left is this close would end mid-way.
    const keepAlive = setInterval(() => undefined, 60_000);
    try {
      // Kubelets first, so no pod is restarted while the rest goes; then everything else at once.
      await Promise.all(this.nodes.map((node) => node.kubelet?.stop('SIGTERM', 5_000)));
      await this.relay?.close();
      await Promise.all(this.children.map((child) => child.stop('SIGTERM', 5_000)));
    } finally {
      clearInterval(keepAlive);
      cleanUpCluster(this.state);
    }
  }
}

async function waitReady(cluster: RunningNodeCluster, what: string, args: string[], timeoutMs = 60_000): Promise<void> {
  let last = '';
  await eventually(
    async () => {
      const result = await cluster.kubectl(args, { timeoutMs: 10_000 });
      last = result.stderr + result.stdout;
      return result.code === 0;
    },
    {
      timeoutMs,
      intervalMs: 200,
      what: () => `${what} (last: ${last.slice(0, 500)}); logs in ${cluster.logDir}`,
    },
  );
}

async function waitNodesReady(cluster: RunningNodeCluster, count: number): Promise<void> {
  const readyLines = `{range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}`;
  let last = '';
  await eventually(
    async () => {
      const result = await cluster.kubectl(['get', 'nodes', '-o', `jsonpath=${readyLines}`], { timeoutMs: 10_000 });
      last = result.stdout + result.stderr;
      return result.stdout.split('\n').filter((line) => line.endsWith('=True')).length === count;
    },
    {
      timeoutMs: 90_000,
      intervalMs: 250,
      what: () => `${count} nodes Ready (last: ${last}); logs in ${cluster.logDir}`,
    },
  );
}

async function startControlPlane(cluster: RunningNodeCluster): Promise<void> {
  const { ns, pki, dataDir, logDir } = cluster;
  const pkiDir = join(dataDir, 'pki');
  mkdirSync(pkiDir, { recursive: true, mode: 0o700 });
  const files = writeControlPlaneFiles(pkiDir, pki);
  cluster.children.push(startEtcdInside(ns, join(dataDir, 'etcd'), logDir));
  cluster.children.push(startApiserverInside(ns, files, logDir));
  await waitReady(cluster, 'kube-apiserver /readyz', ['get', '--raw=/readyz'], 90_000);
  cluster.children.push(startControllerManager(ns, pkiDir, pki, files, logDir));
  cluster.children.push(startScheduler(ns, pkiDir, pki, logDir));
  cluster.children.push(startKubeProxy(ns, pkiDir, pki, logDir, nodeAddresses(1)));
  cluster.children.push(startCoreDns(ns, pkiDir, files, logDir));
}

async function startNode(
  cluster: RunningNodeCluster,
  index: number,
  options: StartNodeClusterOptions,
  seedRoot: string,
): Promise<void> {
  const addresses = nodeAddresses(index);
  const paths = nodePaths(cluster.dataDir, addresses, join(cluster.dataDir, 'pki', 'ca.crt'));
  const cgroupRoot = cluster.state.cgroups[index - 1] ?? '';
  createCgroupRoot(cgroupRoot);
  const containerd = await startContainerd(
    cluster.ns,
    addresses,
    paths,
    cluster.state.cniNetworks[index - 1] ?? '',
    cluster.logDir,
    seedRoot,
  );
  const node: StartedNode = { addresses, paths, containerd, kubelet: undefined };
  cluster.nodes.push(node);
  cluster.children.push(containerd);
  node.kubelet = startKubelet(cluster.ns, addresses, paths, cluster.pki.ca, {
    cgroupRoot: `/${cgroupRoot}`,
    ownsIptablesChains: index === 1,
    labels: options.nodeLabels?.(index) ?? {},
    logDir: cluster.logDir,
  });
  cluster.nodeNames.push(addresses.name);
}

export async function startNodeCluster(options: StartNodeClusterOptions): Promise<NodeCluster> {
  const started = performance.now();
  const nodes = options.nodes ?? MAX_NODES;
  if (!Number.isInteger(nodes) || nodes < 1 || nodes > MAX_NODES) throw new Error(`nodes must be 1 to ${MAX_NODES}`);
  ensureNodeBinaries();
  reapDeadClusters();

  const id = randomBytes(3).toString('hex');
  const state: ClusterState = {
    id,
    ownerPid: process.pid,
    ownerStart: processStart(process.pid) ?? '',
    dataDir: `/tmp/warmpool-nodes-${id}`,
    netns: `warmpool-${id}`,
    cgroups: Array.from({ length: nodes }, (_, i) => `warmpool-${id}-${nodeAddresses(i + 1).name}`),
    cniNetworks: Array.from({ length: nodes }, (_, i) => `warmpool-${id}-${nodeAddresses(i + 1).name}`),
  };
  // Written down before anything changes, and a guardian watching from now on.
  recordMachine(clusterStates(), addHostRoutes);
  writeClusterState(state);
  const guardian = spawnGuardian(state);
  writeClusterState({ ...state, guardianPid: guardian.pid, guardianStart: guardian.start });

  let cluster: RunningNodeCluster | undefined;
  try {
    mkdirSync(join(state.dataDir, 'logs'), { recursive: true });
    const ns = createClusterNamespace(state.netns, nodes);
    const pki = createNodeClusterPki();
    const relay = await startRelay({
      name: 'apiserver',
      enter: ns.enter,
      socketPath: join(state.dataDir, 'apiserver.sock'),
      target: { host: '127.0.0.1', port: APISERVER_PORT },
      logFile: join(state.dataDir, 'logs', 'relay.log'),
      ...(options.apiserverPort === undefined ? {} : { hostPort: options.apiserverPort }),
    });
    cluster = new RunningNodeCluster(state, ns, pki, relay);
    const c = cluster;
    const [seedRoot] = await Promise.all([
      imageSeed(ns, state.dataDir, [options.pauseImage, ...options.images], c.logDir),
      startControlPlane(c).then(() => {
        c.timings.controlPlaneMs = Math.round(performance.now() - started);
      }),
    ]);
    await Promise.all(Array.from({ length: nodes }, (_, i) => startNode(c, i + 1, options, seedRoot)));
    await waitNodesReady(cluster, nodes);
    await waitReady(cluster, 'the default ServiceAccount', ['get', 'serviceaccount', 'default', '-n', 'default']);
    cluster.timings.totalMs = Math.round(performance.now() - started);
    return cluster;
  } catch (error) {
    if (cluster) await cluster.close();
    else cleanUpCluster(state);
    throw error;
  }
}
