// kube-apiserver alone: no controller-manager, no scheduler, no kubelet. Enough
// for CRDs, RBAC, TokenRequest, watches and the aggregation layer's front proxy.
import { dirname } from 'node:path';
import { findBinary } from './binaries.js';
import { ManagedChild } from './children.js';
import { get, type TlsClientAuth } from './http.js';
import { FRONT_PROXY_CLIENT_NAME, type PkiFiles } from './pki.js';
import { eventually } from './wait.js';

export const SERVICE_ACCOUNT_ISSUER = 'https://kubernetes.default.svc.cluster.local';
export const SERVICE_CLUSTER_IP_RANGE = '10.96.0.0/16';

export interface ApiserverOptions {
  port: number;
  etcdUrl: string;
  pki: PkiFiles;
  logFile: string;
  orphanCleanupDir?: string;
  readyTimeoutMs?: number;
  /**
   * Serve /debug/pprof (CPU and heap profiles, to system:masters only) for a benchmark that profiles the apiserver.
   * Off by default: tests never need it.
   */
  profiling?: boolean;
  /** Admission plugins enabled beyond the apiserver's defaults. */
  admissionPlugins?: readonly string[];
}

export function apiserverArgs(options: ApiserverOptions): string[] {
  const { pki } = options;
  return [
    `--etcd-servers=${options.etcdUrl}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${options.port}`,
    `--tls-cert-file=${pki.servingCert}`,
    `--tls-private-key-file=${pki.servingKey}`,
    `--client-ca-file=${pki.caCert}`,
    '--authorization-mode=Node,RBAC',
    `--service-account-issuer=${SERVICE_ACCOUNT_ISSUER}`,
    `--service-account-key-file=${pki.serviceAccountPub}`,
    `--service-account-signing-key-file=${pki.serviceAccountKey}`,
    `--api-audiences=${SERVICE_ACCOUNT_ISSUER}`,
    `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
    // Aggregation layer: how the apiserver proves itself to extension apiservers.
    `--requestheader-client-ca-file=${pki.frontProxyCaCert}`,
    `--requestheader-allowed-names=${FRONT_PROXY_CLIENT_NAME}`,
    '--requestheader-extra-headers-prefix=X-Remote-Extra-',
    '--requestheader-group-headers=X-Remote-Group',
    '--requestheader-username-headers=X-Remote-User',
    `--proxy-client-cert-file=${pki.frontProxyClientCert}`,
    `--proxy-client-key-file=${pki.frontProxyClientKey}`,
    // The endpoint reconciler refuses a loopback advertise address, and nothing
    // in a test cluster reaches the apiserver through the kubernetes Service.
    '--endpoint-reconciler-type=none',
    // Never write outside the cluster's temp dir (the default is /var/run/kubernetes).
    `--cert-dir=${dirname(pki.caCert)}`,
    `--profiling=${options.profiling === true}`,
    ...(options.admissionPlugins !== undefined && options.admissionPlugins.length > 0
      ? [`--enable-admission-plugins=${options.admissionPlugins.join(',')}`]
      : []),
  ];
}

export async function startApiserver(options: ApiserverOptions, admin: TlsClientAuth): Promise<ManagedChild> {
  const child = new ManagedChild({
    name: 'kube-apiserver',
    command: findBinary('kube-apiserver'),
    args: apiserverArgs(options),
    logFile: options.logFile,
    ...(options.orphanCleanupDir === undefined ? {} : { orphanCleanupDir: options.orphanCleanupDir }),
  });
  const readyz = `https://127.0.0.1:${options.port}/readyz`;
  let last = 'no answer yet';
  try {
    await eventually(
      async () => {
        const res = await get(readyz, admin).catch((error: Error) => ({ status: 0, body: error.message }));
        last = `${res.status} ${res.body.slice(0, 2000)}`;
        return res.status === 200;
      },
      {
        timeoutMs: options.readyTimeoutMs ?? 90_000,
        intervalMs: 100,
        what: () => `kube-apiserver ${readyz} not ready (last answer: ${last}); last log lines:\n${child.logTail()}`,
        abort: () => (child.running ? undefined : `kube-apiserver exited (${JSON.stringify(child.exitStatus)})`),
      },
    );
  } catch (error) {
    await child.stop('SIGTERM', 1000);
    throw error;
  }
  return child;
}
