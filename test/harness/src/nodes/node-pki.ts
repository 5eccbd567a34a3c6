// Certificates for a cluster with real nodes: the standalone apiserver's set
// (../pki.ts) with a serving certificate pods can verify through the
// `kubernetes` Service, plus one client identity per component and a kubelet
// serving certificate per node.
import { issueCertificate, type IssuedCertificate } from '@warmpool/runtime';
import { createClusterPki, SERVING_DNS_NAMES, SERVING_IPS, type ClusterPki } from '../pki.js';
import { APISERVER_IP, KUBERNETES_SERVICE_IP, type NodeAddresses } from './topology.js';

export interface NodeClusterPki extends ClusterPki {
  /** The apiserver's identity toward kubelets (logs, exec, port-forward). */
  kubeletClient: IssuedCertificate;
  controllerManager: IssuedCertificate;
  scheduler: IssuedCertificate;
  kubeProxy: IssuedCertificate;
}

function client(ca: IssuedCertificate, commonName: string, organizations?: string[]): IssuedCertificate {
  return issueCertificate({
    subject: { commonName, ...(organizations ? { organizations } : {}) },
    issuer: ca,
    usages: ['client'],
  });
}

export function createNodeClusterPki(): NodeClusterPki {
  const base = createClusterPki();
  const { ca } = base;
  return {
    ...base,
    serving: issueCertificate({
      subject: { commonName: 'kube-apiserver' },
      issuer: ca,
      usages: ['server'],
      dnsNames: SERVING_DNS_NAMES,
      ipAddresses: [...SERVING_IPS, APISERVER_IP, KUBERNETES_SERVICE_IP],
    }),
    kubeletClient: client(ca, 'kube-apiserver-kubelet-client', ['system:masters']),
    controllerManager: client(ca, 'system:kube-controller-manager'),
    scheduler: client(ca, 'system:kube-scheduler'),
    kubeProxy: client(ca, 'system:kube-proxy'),
  };
}

/** A kubelet's client identity (the Node authorizer's system:node:<name>) and its serving certificate. */
export function nodeCertificates(
  ca: IssuedCertificate,
  node: NodeAddresses,
): { client: IssuedCertificate; serving: IssuedCertificate } {
  return {
    client: client(ca, `system:node:${node.name}`, ['system:nodes']),
    serving: issueCertificate({
      subject: { commonName: node.name },
      issuer: ca,
      usages: ['server'],
      dnsNames: [node.name],
      ipAddresses: [node.ip],
    }),
  };
}
