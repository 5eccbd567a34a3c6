// One node: its cgroup root, its containerd (own root, state, socket and CNI
// network) and its kubelet, all of it under the node's directory and inside
// the cluster's network namespace.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findNodeBinary } from '../binaries.js';
import type { ManagedChild } from '../children.js';
import { runCommand } from '../children.js';
import { kubeconfigYaml, writeKubeconfig } from '../kubeconfig.js';
import type { IssuedCertificate } from '../pki.js';
import { eventually } from '../wait.js';
import { cgroupMounts } from './cleanup.js';
import { cniConfig, containerdConfig, kubeletConfig, type NodePaths } from './configs.js';
import { INSIDE_SERVER } from './control-plane.js';
import type { ClusterNamespace } from './namespace.js';
import { nodeCertificates } from './node-pki.js';
import { startInside } from './processes.js';
import type { NodeAddresses } from './topology.js';

export interface StartedNode {
  readonly addresses: NodeAddresses;
  readonly paths: NodePaths;
  readonly containerd: ManagedChild;
  kubelet: ManagedChild | undefined;
}

/**
 * kubelet with cgroupfs on cgroup v1 wants its root in every hierarchy; a new
 * cpuset starts empty and takes no task until it has cpus and mems.
 */
export function createCgroupRoot(name: string): void {
  for (const mount of cgroupMounts(true)) {
    const dir = join(mount, name);
    mkdirSync(dir, { recursive: true });
    if (existsSync(join(mount, 'cpuset.cpus'))) {
      for (const file of ['cpuset.cpus', 'cpuset.mems'])
        writeFileSync(join(dir, file), readFileSync(join(mount, file), 'utf8').trim());
    }
  }
}

export function nodePaths(clusterDir: string, node: NodeAddresses, caCert: string): NodePaths {
  const dir = join(clusterDir, node.name);
  return {
    dir,
    containerdSocket: join(dir, 'containerd.sock'),
    cniConfDir: join(dir, 'cni'),
    kubeletRoot: join(dir, 'kubelet'),
    podLogs: join(dir, 'pod-logs'),
    kubeletConfig: join(dir, 'kubelet.yaml'),
    kubeconfig: join(dir, 'kubelet.kubeconfig'),
    caCert,
    servingCert: join(dir, 'kubelet.crt'),
    servingKey: join(dir, 'kubelet.key'),
  };
}

export function containerdRoot(paths: NodePaths): string {
  return join(paths.dir, 'containerd', 'root');
}

/** Starts the node's containerd; `seedRoot` (image-seed.ts) becomes its root first, images included. */
export async function startContainerd(
  ns: ClusterNamespace,
  node: NodeAddresses,
  paths: NodePaths,
  networkName: string,
  logDir: string,
  seedRoot: string | undefined,
): Promise<ManagedChild> {
  for (const dir of [paths.dir, paths.cniConfDir, paths.podLogs, paths.kubeletRoot])
    mkdirSync(dir, { recursive: true });
  if (seedRoot !== undefined) plantSeed(seedRoot, containerdRoot(paths));
  writeFileSync(join(paths.cniConfDir, '10-warmpool.conflist'), cniConfig(node, networkName, join(paths.dir, 'ipam')));
  const config = join(paths.dir, 'containerd.toml');
  writeFileSync(config, containerdConfig(node, paths));
  // The shim is found next to containerd on PATH.
  const bin = findNodeBinary('containerd-shim-runc-v2').replace(/\/[^/]+$/, '');
  const child = startInside(
    ns,
    logDir,
    `containerd-${node.name}`,
    findNodeBinary('containerd'),
    [`--config=${config}`],
    {
      ...process.env,
      PATH: `${bin}:${process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin'}`,
    },
  );
  await eventually(() => existsSync(paths.containerdSocket), {
    timeoutMs: 30_000,
    what: () => `containerd of ${node.name} listening on ${paths.containerdSocket}:\n${child.logTail()}`,
    abort: () => (child.running ? undefined : `containerd of ${node.name} exited`),
  });
  return child;
}

/** `ctr images import` of OCI archives into the node's k8s.io namespace (nothing is ever pulled). */
export async function importImages(paths: NodePaths, archives: string[]): Promise<void> {
  for (const archive of archives) {
    const result = await runCommand({
      command: findNodeBinary('ctr'),
      args: ['--address', paths.containerdSocket, '-n', 'k8s.io', 'images', 'import', '--local', archive],
      timeoutMs: 120_000,
    });
    if (result.code !== 0) throw new Error(`ctr images import ${archive} failed:\n${result.stderr}${result.stdout}`);
  }
}

export function startKubelet(
  ns: ClusterNamespace,
  node: NodeAddresses,
  paths: NodePaths,
  ca: IssuedCertificate,
  options: { cgroupRoot: string; ownsIptablesChains: boolean; labels: Record<string, string>; logDir: string },
): ManagedChild {
  const certs = nodeCertificates(ca, node);
  writeFileSync(paths.servingCert, certs.serving.certPem, { mode: 0o600 });
  writeFileSync(paths.servingKey, certs.serving.keyPem, { mode: 0o600 });
  writeKubeconfig(
    paths.kubeconfig,
    kubeconfigYaml({
      name: 'warmpool-nodes',
      server: INSIDE_SERVER,
      caPem: ca.certPem,
      userName: `system:node:${node.name}`,
      user: { clientCertPem: certs.client.certPem, clientKeyPem: certs.client.keyPem },
    }),
  );
  writeFileSync(paths.kubeletConfig, kubeletConfig(node, paths, options));
  const labels = Object.entries(options.labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  return startInside(ns, options.logDir, `kubelet-${node.name}`, findNodeBinary('kubelet'), [
    `--config=${paths.kubeletConfig}`,
    `--kubeconfig=${paths.kubeconfig}`,
    `--root-dir=${paths.kubeletRoot}`,
    `--cert-dir=${join(paths.dir, 'kubelet-pki')}`,
    `--hostname-override=${node.name}`,
    `--node-ip=${node.ip}`,
    ...(labels === '' ? [] : [`--node-labels=${labels}`]),
    '--v=1',
  ]);
}

/**
 * A node's containerd root as a hard-linked copy of the seed (a plain copy
 * across filesystems). Its bolt databases are copied for real: bolt locks its
 * file, and a shared inode would be one lock for every node.
 */
export function plantSeed(seedRoot: string, root: string): void {
  mkdirSync(join(root, '..'), { recursive: true });
  try {
    execFileSync('cp', ['-al', seedRoot, root], { stdio: 'pipe' });
  } catch {
    rmSync(root, { recursive: true, force: true });
    execFileSync('cp', ['-a', seedRoot, root], { stdio: 'pipe' });
  }
  const databases = execFileSync('find', [root, '-name', '*.db', '-type', 'f'], { encoding: 'utf8' });
  for (const db of databases.split('\n').filter((line) => line !== '')) {
    copyFileSync(db, `${db}.own`);
    renameSync(`${db}.own`, db);
  }
}
