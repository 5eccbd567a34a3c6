// The configuration files of a node cluster's components, each a pure function
// of where the node lives. What makes them work on a machine without
// CAP_SYS_RESOURCE and with cgroup v1 is said where it is set.
import { CLUSTER_DOMAIN, DNS_IP, type NodeAddresses } from './topology.js';

/**
 * Helm values that run the chart on these nodes from the images built here (nothing is pulled): the fake
 * sandboxd beside each agent and the in-chart Redis from images/build.sh's Redis image.
 */
export const LOCAL_CHART_VALUES: readonly string[] = [
  'fakeSandboxd.enabled=true',
  'image.pullPolicy=Never',
  'redis.enabled=true',
  'redis.image.repository=localhost/warmpool/redis',
  'redis.image.tag=7-bookworm',
  'redis.image.pullPolicy=Never',
];

export const PAUSE_IMAGE = 'localhost/warmpool/pause:1';

export interface NodePaths {
  dir: string;
  containerdSocket: string;
  cniConfDir: string;
  kubeletRoot: string;
  podLogs: string;
  kubeletConfig: string;
  kubeconfig: string;
  caCert: string;
  servingCert: string;
  servingKey: string;
}

export function containerdConfig(node: NodeAddresses, paths: NodePaths): string {
  const dir = paths.dir;
  return `version = 4
root = "${dir}/containerd/root"
state = "${dir}/containerd/state"
# Every node runs its own containerd, each with its own paths: nothing under
# /var/lib/containerd, /run/containerd, /opt/containerd or /etc/containerd.
imports = []
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.server.v1.grpc-tcp"]

[plugins]
  [plugins."io.containerd.server.v1.grpc"]
    address = "${paths.containerdSocket}"

  [plugins."io.containerd.server.v1.ttrpc"]
    address = "${paths.containerdSocket}.ttrpc"

  [plugins."io.containerd.shim.v1.manager"]
    socket_dir = "${dir}/s"

  [plugins."io.containerd.internal.v1.opt"]
    path = "${dir}/containerd/opt"

  [plugins."io.containerd.grpc.v1.cri"]
    # Inside the cluster's network namespace, where kubelet reaches it for port-forward.
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"

  [plugins."io.containerd.cri.v1.runtime"]
    # No CAP_SYS_RESOURCE here: runc may not raise a container's oom_score_adj above its own.
    restrict_oom_score_adj = true
    # Pod network namespaces are mounted under the state dir, not /var/run/netns.
    netns_mounts_under_state_dir = true

    [plugins."io.containerd.cri.v1.runtime".containerd]
      default_runtime_name = "runc"

      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"

        [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
          Root = "${dir}/runc"
          SystemdCgroup = false

    [plugins."io.containerd.cri.v1.runtime".cni]
      bin_dirs = ["/usr/lib/cni"]
      conf_dir = "${paths.cniConfDir}"
      max_conf_num = 1

  [plugins."io.containerd.cri.v1.images"]
    snapshotter = "overlayfs"

    [plugins."io.containerd.cri.v1.images".pinned_images]
      sandbox = "${PAUSE_IMAGE}"
`;
}

/** One bridge per node, its own /24; no masquerade (nothing leaves the namespace) and no default gateway beyond it. */
export function cniConfig(node: NodeAddresses, networkName: string, ipamDir: string): string {
  return JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: networkName,
      plugins: [
        {
          type: 'bridge',
          bridge: node.bridge,
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: node.podCidr, gateway: node.podGateway }]],
            routes: [{ dst: '0.0.0.0/0' }],
            dataDir: ipamDir,
          },
        },
      ],
    },
    null,
    2,
  );
}

export function kubeletConfig(
  node: NodeAddresses,
  paths: NodePaths,
  options: { cgroupRoot: string; ownsIptablesChains: boolean },
): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${node.ip}
port: 10250
readOnlyPort: 0
healthzBindAddress: ${node.ip}
healthzPort: 10248
tlsCertFile: ${paths.servingCert}
tlsPrivateKeyFile: ${paths.servingKey}
authentication:
  anonymous: { enabled: false }
  webhook: { enabled: true }
  x509: { clientCAFile: ${paths.caCert} }
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://${paths.containerdSocket}
# cgroup v1 on this kind of machine; cgroupfs, each node under a root of its own.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: ${options.cgroupRoot}
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
# No CAP_SYS_RESOURCE: kubelet may not lower its own score.
oomScoreAdj: 0
podLogsDir: ${paths.podLogs}
volumePluginDir: ${paths.dir}/volume-plugins
clusterDNS: [${DNS_IP}]
clusterDomain: ${CLUSTER_DOMAIN}
# The host's resolv.conf names servers outside the machine: pods get only the cluster's DNS.
resolvConf: ""
failSwapOn: false
# All nodes share one network namespace and so one set of iptables chains.
makeIPTablesUtilChains: ${options.ownsIptablesChains}
hairpinMode: hairpin-veth
serializeImagePulls: false
# Secret volumes follow a change at the next pod sync: every 10 s here rather
# than every minute, so a rotated fleet token reaches the pods in a test's time.
syncFrequency: 10s
# Images are imported, never pulled: nothing may evict them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 50Mi
  nodefs.available: 1%
  imagefs.available: 1%
  nodefs.inodesFree: 1%
maxPods: 60
rotateCertificates: false
serverTLSBootstrap: false
shutdownGracePeriod: 0s
staticPodPath: ""
`;
}

export function kubeProxyConfig(kubeconfig: string, node: NodeAddresses): string {
  return `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: ${kubeconfig}
hostnameOverride: ${node.name}
# Its node's IP from the start: a kube-proxy that learns it later (from the Node
# object, once kubelet registered it) exits to start afresh.
bindAddress: ${node.ip}
nodePortAddresses: [primary]
mode: iptables
iptables:
  # The bridge does not pass through iptables (no br_netfilter): replies of a
  # pod reached through a Service must come back through the namespace's stack.
  masqueradeAll: true
  localhostNodePorts: false
# 0: leave the machine-wide conntrack table size and timeouts alone.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
`;
}

/** The cluster's DNS: only cluster.local (and reverse lookups), never forwarded anywhere. */
export function corefile(kubeconfig: string): string {
  return `.:53 {
    bind ${DNS_IP}
    errors
    ready 127.0.0.1:8181
    kubernetes ${CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {
        kubeconfig ${kubeconfig}
        pods insecure
    }
    loadbalance
}
`;
}
