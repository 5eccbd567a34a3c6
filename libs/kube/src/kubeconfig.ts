import { existsSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { configureTransport, type KubeTransportOptions } from './transport.js';

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/**
 * The KubeConfig to use: the file at `path` when given; else $KUBECONFIG;
 * else the pod's service account when running in a cluster; else ~/.kube/config.
 * `transport`: the options of the transport its clients will share (default: the transport's own).
 */
export function loadKubeConfig(path?: string, transport?: KubeTransportOptions): KubeConfig {
  const kubeConfig = new KubeConfig();
  if (path) kubeConfig.loadFromFile(path);
  else if (process.env['KUBECONFIG']) kubeConfig.loadFromDefault();
  else if (process.env['KUBERNETES_SERVICE_HOST'] && existsSync(SERVICE_ACCOUNT_TOKEN)) kubeConfig.loadFromCluster();
  else kubeConfig.loadFromDefault();
  if (transport !== undefined) configureTransport(kubeConfig, transport);
  return kubeConfig;
}
