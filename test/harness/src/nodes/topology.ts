// The addresses inside a node cluster's network namespace. They exist nowhere
// else: the host namespace routes each range to `unreachable` while a cluster runs.
export const APISERVER_IP = '10.200.0.1';
export const APISERVER_PORT = 6443;
/** CoreDNS listens here too (kubelet's clusterDNS). */
export const DNS_IP = APISERVER_IP;
export const SERVICE_CIDR = '10.96.0.0/16';
export const KUBERNETES_SERVICE_IP = '10.96.0.1';
export const CLUSTER_DOMAIN = 'cluster.local';
export const MAX_NODES = 3;

export interface NodeAddresses {
  /** node-1, node-2, ... */
  name: string;
  index: number;
  ip: string;
  podCidr: string;
  podGateway: string;
  bridge: string;
}

export function nodeAddresses(index: number): NodeAddresses {
  return {
    name: `node-${index}`,
    index,
    ip: `10.200.0.${10 + index}`,
    podCidr: `10.244.${index}.0/24`,
    podGateway: `10.244.${index}.1`,
    bridge: `wp-br${index}`,
  };
}
