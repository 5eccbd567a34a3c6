// The control plane of a cluster with real nodes, all inside its network
// namespace: etcd and kube-apiserver (on the namespace's loopback and on the
// address the `kubernetes` Service's endpoints name), kube-controller-manager,
// kube-scheduler, kube-proxy (Services for pods) and CoreDNS (cluster.local only).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiserverArgs } from '../apiserver.js';
import { findBinary, findNodeBinary } from '../binaries.js';
import type { ManagedChild } from '../children.js';
import { etcdArgs } from '../etcd.js';
import { kubeconfigYaml, writeKubeconfig } from '../kubeconfig.js';
import type { IssuedCertificate } from '../pki.js';
import { writeClusterPki, type PkiFiles } from '../pki.js';
import { corefile, kubeProxyConfig } from './configs.js';
import type { ClusterNamespace } from './namespace.js';
import type { NodeClusterPki } from './node-pki.js';
import { startInside } from './processes.js';
import { APISERVER_IP, APISERVER_PORT, SERVICE_CIDR, type NodeAddresses } from './topology.js';

/** The apiserver as components inside the namespace reach it. */
export const INSIDE_SERVER = `https://127.0.0.1:${APISERVER_PORT}`;

export interface ControlPlaneFiles {
  pki: PkiFiles;
  kubeletClientCert: string;
  kubeletClientKey: string;
  /** Admin kubeconfig for programs inside the namespace. */
  insideKubeconfig: string;
}

export function writeControlPlaneFiles(dir: string, pki: NodeClusterPki): ControlPlaneFiles {
  const files = writeClusterPki(pki, dir);
  const write = (file: string, content: string): string => {
    const path = join(dir, file);
    writeFileSync(path, content, { mode: 0o600 });
    return path;
  };
  return {
    pki: files,
    kubeletClientCert: write('kubelet-client.crt', pki.kubeletClient.certPem),
    kubeletClientKey: write('kubelet-client.key', pki.kubeletClient.keyPem),
    insideKubeconfig: componentKubeconfig(dir, 'admin', pki.ca, pki.admin),
  };
}

/** A kubeconfig with the identity embedded, for a component inside the namespace. */
export function componentKubeconfig(
  dir: string,
  name: string,
  ca: IssuedCertificate,
  identity: IssuedCertificate,
): string {
  return writeKubeconfig(
    join(dir, `${name}.kubeconfig`),
    kubeconfigYaml({
      name: 'warmpool-nodes',
      server: INSIDE_SERVER,
      caPem: ca.certPem,
      userName: name,
      user: { clientCertPem: identity.certPem, clientKeyPem: identity.keyPem },
    }),
  );
}

export function startEtcdInside(ns: ClusterNamespace, dataDir: string, logDir: string): ManagedChild {
  const args = etcdArgs({ dataDir, clientPort: 2379, peerPort: 2380, logFile: '' });
  return startInside(ns, logDir, 'etcd', findBinary('etcd'), args);
}

export function startApiserverInside(ns: ClusterNamespace, files: ControlPlaneFiles, logDir: string): ManagedChild {
  const base = apiserverArgs({
    port: APISERVER_PORT,
    etcdUrl: 'http://127.0.0.1:2379',
    pki: files.pki,
    logFile: '',
  });
  const replaced = new Set([
    '--bind-address',
    '--advertise-address',
    '--endpoint-reconciler-type',
    '--service-cluster-ip-range',
  ]);
  const args = base.filter((arg) => !replaced.has(arg.split('=')[0] ?? ''));
  return startInside(ns, logDir, 'kube-apiserver', findBinary('kube-apiserver'), [
    ...args,
    // Loopback for the components, APISERVER_IP for pods (the `kubernetes` Service's endpoint).
    '--bind-address=0.0.0.0',
    `--advertise-address=${APISERVER_IP}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    '--allow-privileged=true',
    `--kubelet-client-certificate=${files.kubeletClientCert}`,
    `--kubelet-client-key=${files.kubeletClientKey}`,
    // Node names resolve nowhere: reach kubelets by the address they report.
    '--kubelet-preferred-address-types=InternalIP',
  ]);
}

export function startControllerManager(
  ns: ClusterNamespace,
  dir: string,
  pki: NodeClusterPki,
  files: ControlPlaneFiles,
  logDir: string,
): ManagedChild {
  const kubeconfig = componentKubeconfig(dir, 'kube-controller-manager', pki.ca, pki.controllerManager);
  return startInside(ns, logDir, 'kube-controller-manager', findNodeBinary('kube-controller-manager'), [
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    '--bind-address=127.0.0.1',
    '--leader-elect=false',
    '--use-service-account-credentials=true',
    `--service-account-private-key-file=${files.pki.serviceAccountKey}`,
    `--root-ca-file=${files.pki.caCert}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    // A node that stops reporting is a test's doing: its pods go at once.
    '--node-monitor-grace-period=20s',
    '--profiling=false',
  ]);
}

export function startScheduler(ns: ClusterNamespace, dir: string, pki: NodeClusterPki, logDir: string): ManagedChild {
  const kubeconfig = componentKubeconfig(dir, 'kube-scheduler', pki.ca, pki.scheduler);
  return startInside(ns, logDir, 'kube-scheduler', findNodeBinary('kube-scheduler'), [
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    '--bind-address=127.0.0.1',
    '--leader-elect=false',
    '--profiling=false',
  ]);
}

/** One kube-proxy serves every node: they share the namespace and so its iptables. */
export function startKubeProxy(
  ns: ClusterNamespace,
  dir: string,
  pki: NodeClusterPki,
  logDir: string,
  node: NodeAddresses,
): ManagedChild {
  const kubeconfig = componentKubeconfig(dir, 'kube-proxy', pki.ca, pki.kubeProxy);
  const config = join(dir, 'kube-proxy.yaml');
  writeFileSync(config, kubeProxyConfig(kubeconfig, node));
  return startInside(ns, logDir, 'kube-proxy', findNodeBinary('kube-proxy'), [`--config=${config}`]);
}

export function startCoreDns(
  ns: ClusterNamespace,
  dir: string,
  files: ControlPlaneFiles,
  logDir: string,
): ManagedChild {
  const config = join(dir, 'Corefile');
  writeFileSync(config, corefile(files.insideKubeconfig));
  return startInside(ns, logDir, 'coredns', findNodeBinary('coredns'), [`-conf=${config}`]);
}
