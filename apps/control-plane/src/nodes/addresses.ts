// Whether a NodeInventory's spec.address belongs to its node. The inventory is
// written by an agent, and a stolen agent token once sufficed to re-point
// another node's address anywhere: the next push carried the fleet token
// there. So the driver calls an agent only at a host the Node object of that
// name vouches for, as the kubelet reports it (status.addresses: the agent on
// the host network, or the local stack), or the IP of a node-agent pod the
// apiserver has scheduled on that node (the chart's DaemonSet advertises its
// pod IP). Neither is writable with an agent's token.
import type { KubeNode, KubeObject, KubePod, NodeInventory } from '@warmpool/api';
import type { Lister } from '@warmpool/kube';
import { parseHostPort } from '@warmpool/runtime';

/** Why `address` is not `node`'s, or undefined when it is. */
/** A node's agent at an address its Node vouches for. */
export interface AgentAddress {
  node: string;
  /** host:port */
  address: string;
}

export type AddressCheck = (node: string, address: string) => string | undefined;

export interface NodeAddressSources {
  node(name: string): KubeNode | undefined;
  /** The node agents' pods, when the driver knows where they are (--agent-pod-selector). */
  agentPods?: () => readonly KubePod[];
}

/** A check over the sources as they are now (pod IPs are indexed once per call, not once per node). */
export function addressCheckOf(sources: NodeAddressSources): AddressCheck {
  const podIps = indexPodIps(sources.agentPods?.() ?? []);
  return (name, address) => {
    let host: string;
    try {
      host = normalize(parseHostPort(address).host);
    } catch {
      return `spec.address ${JSON.stringify(address)} is not HOST:PORT`;
    }
    const node = sources.node(name);
    if (node === undefined) return `there is no Node named ${name} to vouch for ${host}`;
    const nodeAddresses = (node.status?.addresses ?? []).map((a) => normalize(a.address));
    if (nodeAddresses.includes(host)) return undefined;
    if (podIps.get(name)?.has(host) === true) return undefined;
    const listed = nodeAddresses.length === 0 ? 'none' : nodeAddresses.join(', ');
    const pods = sources.agentPods === undefined ? '' : ' nor the IP of a node-agent pod on it';
    return `${host} is not one of Node ${name}'s addresses (${listed})${pods}`;
  };
}

function indexPodIps(pods: readonly KubePod[]): Map<string, Set<string>> {
  const byNode = new Map<string, Set<string>>();
  for (const pod of pods) {
    const node = pod.spec?.nodeName;
    // A pod that is gone or going keeps its IP in the cache for a while; the IP may already be another pod's.
    if (node === undefined || node === '' || pod.metadata?.deletionTimestamp !== undefined) continue;
    const phase = pod.status?.phase;
    if (phase === 'Succeeded' || phase === 'Failed') continue;
    const ips = [pod.status?.podIP, ...(pod.status?.podIPs ?? []).map((p) => p.ip)].filter(
      (ip): ip is string => typeof ip === 'string' && ip !== '',
    );
    if (ips.length === 0) continue;
    let set = byNode.get(node);
    if (set === undefined) byNode.set(node, (set = new Set()));
    for (const ip of ips) set.add(normalize(ip));
  }
  return byNode;
}

function normalize(host: string): string {
  return host.toLowerCase();
}

/** Node objects are large (images, conditions); the cache keeps only what the check reads. */
export function slimNode(obj: KubeObject): KubeNode {
  const node = obj as KubeNode;
  const { name, uid, resourceVersion, deletionTimestamp } = node.metadata ?? {};
  return {
    metadata: {
      ...(name !== undefined ? { name } : {}),
      ...(uid !== undefined ? { uid } : {}),
      ...(resourceVersion !== undefined ? { resourceVersion } : {}),
      ...(deletionTimestamp !== undefined ? { deletionTimestamp } : {}),
    },
    status: { addresses: (node.status?.addresses ?? []).map((a) => ({ type: a.type, address: a.address })) },
  };
}

/** The node agents' pods, cut down the same way. */
export function slimPod(obj: KubeObject): KubePod {
  const pod = obj as KubePod;
  const { name, namespace, uid, resourceVersion, deletionTimestamp } = pod.metadata ?? {};
  const status = pod.status ?? {};
  return {
    metadata: {
      ...(name !== undefined ? { name } : {}),
      ...(namespace !== undefined ? { namespace } : {}),
      ...(uid !== undefined ? { uid } : {}),
      ...(resourceVersion !== undefined ? { resourceVersion } : {}),
      ...(deletionTimestamp !== undefined ? { deletionTimestamp } : {}),
    },
    spec: { ...(pod.spec?.nodeName !== undefined ? { nodeName: pod.spec.nodeName } : {}) },
    status: {
      ...(status.phase !== undefined ? { phase: status.phase } : {}),
      ...(status.podIP !== undefined ? { podIP: status.podIP } : {}),
      ...(status.podIPs !== undefined ? { podIPs: status.podIPs.map((p) => ({ ip: p.ip })) } : {}),
    },
  };
}

/** Whether a Node update can change a check: its addresses. */
export function nodeAddressesChanged(old: KubeNode, next: KubeNode): boolean {
  return JSON.stringify(old.status?.addresses ?? []) !== JSON.stringify(next.status?.addresses ?? []);
}

/** Whether a pod update can change a check: its node, IPs, phase or deletion. */
export function podPlacementChanged(old: KubePod, next: KubePod): boolean {
  return (
    old.spec?.nodeName !== next.spec?.nodeName ||
    old.status?.podIP !== next.status?.podIP ||
    JSON.stringify(old.status?.podIPs ?? []) !== JSON.stringify(next.status?.podIPs ?? []) ||
    old.status?.phase !== next.status?.phase ||
    old.metadata?.deletionTimestamp !== next.metadata?.deletionTimestamp
  );
}

/** The node agents whose NodeInventory address their Node vouches for: the only ones called with the fleet token. */
export function vouchedAgents(inventories: Lister<NodeInventory>, vouched: AddressCheck): AgentAddress[] {
  return inventories.list().flatMap((inventory) => {
    const node = inventory.metadata?.name;
    const address = inventory.spec?.address;
    return node !== undefined && address && vouched(node, address) === undefined ? [{ node, address }] : [];
  });
}
