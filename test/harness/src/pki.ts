// Certificates for a throw-away cluster, made in-process (libs/runtime's X.509
// writer): no openssl CLI, nothing cached across runs.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateKeyPair, issueCertificate, type IssuedCertificate, type KeyPair } from '@warmpool/runtime';

export { generateKeyPair, issueCertificate };
export type { CertificateRequest, IssuedCertificate, KeyPair, Subject } from '@warmpool/runtime';

/** Everything a standalone kube-apiserver needs, all fresh. */
export interface ClusterPki {
  ca: IssuedCertificate;
  serving: IssuedCertificate;
  admin: IssuedCertificate;
  serviceAccount: KeyPair;
  frontProxyCa: IssuedCertificate;
  frontProxyClient: IssuedCertificate;
}

export const FRONT_PROXY_CLIENT_NAME = 'front-proxy-client';
export const SERVING_DNS_NAMES = [
  'localhost',
  'kubernetes',
  'kubernetes.default',
  'kubernetes.default.svc',
  'kubernetes.default.svc.cluster.local',
];
export const SERVING_IPS = ['127.0.0.1', '::1'];

export function createClusterPki(): ClusterPki {
  const ca = issueCertificate({ subject: { commonName: 'warmpool-test-ca' }, isCa: true });
  const frontProxyCa = issueCertificate({ subject: { commonName: 'warmpool-test-front-proxy-ca' }, isCa: true });
  return {
    ca,
    serving: issueCertificate({
      subject: { commonName: 'kube-apiserver' },
      issuer: ca,
      usages: ['server'],
      dnsNames: SERVING_DNS_NAMES,
      ipAddresses: SERVING_IPS,
    }),
    admin: issueCertificate({
      subject: { commonName: 'admin', organizations: ['system:masters'] },
      issuer: ca,
      usages: ['client'],
    }),
    serviceAccount: generateKeyPair(),
    frontProxyCa,
    frontProxyClient: issueCertificate({
      subject: { commonName: FRONT_PROXY_CLIENT_NAME },
      issuer: frontProxyCa,
      usages: ['client'],
    }),
  };
}

export interface PkiFiles {
  caCert: string;
  servingCert: string;
  servingKey: string;
  adminCert: string;
  adminKey: string;
  serviceAccountKey: string;
  serviceAccountPub: string;
  frontProxyCaCert: string;
  frontProxyClientCert: string;
  frontProxyClientKey: string;
}

export function writeClusterPki(pki: ClusterPki, dir: string): PkiFiles {
  const write = (file: string, content: string): string => {
    const path = join(dir, file);
    writeFileSync(path, content, { mode: 0o600 });
    return path;
  };
  return {
    caCert: write('ca.crt', pki.ca.certPem),
    servingCert: write('apiserver.crt', pki.serving.certPem),
    servingKey: write('apiserver.key', pki.serving.keyPem),
    adminCert: write('admin.crt', pki.admin.certPem),
    adminKey: write('admin.key', pki.admin.keyPem),
    serviceAccountKey: write('sa.key', pki.serviceAccount.privateKeyPem),
    serviceAccountPub: write('sa.pub', pki.serviceAccount.publicKeyPem),
    frontProxyCaCert: write('front-proxy-ca.crt', pki.frontProxyCa.certPem),
    frontProxyClientCert: write('front-proxy-client.crt', pki.frontProxyClient.certPem),
    frontProxyClientKey: write('front-proxy-client.key', pki.frontProxyClient.keyPem),
  };
}
