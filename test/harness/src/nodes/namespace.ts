// The cluster's network namespace: loopback carries the control plane's, the
// apiserver's and the nodes' addresses (no dummy device: the kernel here has
// none), and forwarding is on (a per-namespace switch: the host's stays as it is).
import { execFileSync } from 'node:child_process';
import { APISERVER_IP, nodeAddresses, SERVICE_CIDR } from './topology.js';

export interface ClusterNamespace {
  readonly name: string;
  /** The command prefix that runs a program inside it, in the host's mount namespace. */
  readonly enter: string[];
  run(command: string, args: string[]): string;
}

export function createClusterNamespace(name: string, nodes: number): ClusterNamespace {
  const ip = (...args: string[]): string => execFileSync('ip', args, { encoding: 'utf8' });
  ip('netns', 'add', name);
  // nsenter, not `ip netns exec`: that one gives each program a mount namespace
  // of its own, so kubelet's volume mounts would stay invisible to containerd.
  const enter = ['nsenter', `--net=/run/netns/${name}`, '--'];
  const run = (command: string, args: string[]): string =>
    execFileSync(enter[0] ?? 'nsenter', [...enter.slice(1), command, ...args], { encoding: 'utf8' });
  ip('-n', name, 'link', 'set', 'lo', 'up');
  ip('-n', name, 'addr', 'add', `${APISERVER_IP}/32`, 'dev', 'lo');
  for (let i = 1; i <= nodes; i++) ip('-n', name, 'addr', 'add', `${nodeAddresses(i).ip}/32`, 'dev', 'lo');
  // No default route in here: programs of the namespace itself (the apiserver calling an aggregated API) need a
  // route to the Service range to get as far as kube-proxy's DNAT, which then sends them on to a pod.
  ip('-n', name, 'route', 'add', SERVICE_CIDR, 'dev', 'lo', 'src', APISERVER_IP);
  run('sysctl', ['-q', '-w', 'net.ipv4.ip_forward=1']);
  return { name, enter, run };
}
