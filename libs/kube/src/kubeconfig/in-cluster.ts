// A pod's own identity: the apiserver from the service environment the kubelet
// sets, the CA and the (rotating, projected) token its service account mounts.
import { existsSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { CredentialsKubeConfig, tokenFile } from './credentials.js';
import { KubeConfigError } from './kubeconfig.js';
import { pemFile } from './refreshed-file.js';

const SERVICE_ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';

/** Whether this process runs in a pod with a service account token mounted. */
export function inCluster(root = SERVICE_ACCOUNT): boolean {
  return Boolean(process.env['KUBERNETES_SERVICE_HOST']) && existsSync(`${root}/token`);
}

/** The pod's service account, as client-go's rest.InClusterConfig reads it. */
export function inClusterKubeConfig(root = SERVICE_ACCOUNT): CredentialsKubeConfig {
  const host = process.env['KUBERNETES_SERVICE_HOST'];
  const port = process.env['KUBERNETES_SERVICE_PORT'];
  if (!host || !port)
    throw new KubeConfigError(
      'in a pod without KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT: no apiserver to use',
    );
  return new CredentialsKubeConfig({
    server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`,
    ca: { file: pemFile(`${root}/ca.crt`) },
    token: tokenFile(`${root}/token`),
  });
}
