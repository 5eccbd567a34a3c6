// What a node cluster changes outside its own directory and network namespace,
// written down before it is changed, so that a teardown (or the guardian, or
// the next start after a SIGKILL) can put it back.
//
// Invariant: /run/warmpool-nodes/machine.json holds the machine's values from
// before the first live cluster; it is written only when no other cluster is
// live and restored (then removed) only by the last one to go.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const STATE_DIR = process.env['WARMPOOL_NODES_STATE_DIR'] ?? '/run/warmpool-nodes';
const MACHINE_FILE = join(STATE_DIR, 'machine.json');

/** Global sysctls kubelet rewrites at start (pkg/kubelet/cm setupKernelTunables) and the host's own forwarding flag. */
export const GLOBAL_SYSCTLS = [
  'kernel/panic',
  'kernel/panic_on_oops',
  'kernel/keys/root_maxkeys',
  'kernel/keys/root_maxbytes',
  'vm/overcommit_memory',
  'vm/panic_on_oom',
  'net/ipv4/ip_forward',
] as const;

/**
 * The ranges that exist only inside a cluster's network namespace. The host
 * namespace gets an `unreachable` route for each, so a stray packet from the
 * host fails at once instead of leaving through the default gateway.
 */
export const CLUSTER_RANGES = { nodes: '10.200.0.0/24', pods: '10.244.0.0/16', services: '10.96.0.0/16' } as const;

export interface ClusterState {
  id: string;
  ownerPid: number;
  /** /proc/<pid>/stat start time of the owner, so a reused pid is not taken for it. */
  ownerStart: string;
  guardianPid?: number;
  guardianStart?: string;
  dataDir: string;
  netns: string;
  /** Cgroup names (relative to each v1 hierarchy's root) made for the nodes. */
  cgroups: string[];
  /** CNI network names, whose results libcni caches under /var/lib/cni. */
  cniNetworks: string[];
}

interface MachineState {
  sysctls: Record<string, string>;
  hostRoutes: string[];
  /** `ip netns add` makes /run/netns a mount point of its own; undone when it was not one before. */
  netnsDirMounted: boolean;
  /** Directories kubelet or libcni create at fixed paths that did not exist before: removed at the end. */
  createdDirs: string[];
}

/** kubelet's device-plugin directory is not under --root-dir; libcni caches results under /var/lib/cni. */
const FIXED_DIRS = ['/var/lib/kubelet', '/var/lib/cni'];

export const NETNS_DIR = '/run/netns';

function isMountPoint(path: string): boolean {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .some((line) => line.split(' ')[4] === path);
}

export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function alive(pid: number | undefined, start: string | undefined): boolean {
  return pid !== undefined && start !== undefined && processStart(pid) === start;
}

export function stateFile(id: string): string {
  return join(STATE_DIR, `${id}.json`);
}

export function writeClusterState(state: ClusterState): void {
  mkdirSync(STATE_DIR, { recursive: true, mode: 0o700 });
  writeFileSync(stateFile(state.id), JSON.stringify(state, null, 2));
}

export function readClusterState(file: string): ClusterState | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as ClusterState;
  } catch {
    return undefined;
  }
}

export function clusterStates(): ClusterState[] {
  if (!existsSync(STATE_DIR)) return [];
  return readdirSync(STATE_DIR)
    .filter((f) => f.endsWith('.json') && f !== 'machine.json')
    .map((f) => readClusterState(join(STATE_DIR, f)))
    .filter((s): s is ClusterState => s !== undefined);
}

/** Whether the owner or its guardian still runs: somebody will clean this cluster up. */
export function isLive(state: ClusterState): boolean {
  return alive(state.ownerPid, state.ownerStart) || alive(state.guardianPid, state.guardianStart);
}

function readSysctl(name: string): string | undefined {
  try {
    return readFileSync(`/proc/sys/${name}`, 'utf8').trim();
  } catch {
    return undefined;
  }
}

function writeSysctl(name: string, value: string): void {
  try {
    if (readSysctl(name) !== value) writeFileSync(`/proc/sys/${name}`, value);
  } catch (error) {
    console.error(`warmpool nodes: cannot restore ${name}=${value}: ${(error as Error).message}`);
  }
}

/**
 * Records the machine's values, then makes the host-side changes with
 * `change` (which returns what it added), unless another live cluster already
 * did both: its record holds the values from before any cluster.
 */
export function recordMachine(others: ClusterState[], change: () => string[]): void {
  if (others.some(isLive) && existsSync(MACHINE_FILE)) return;
  const sysctls: Record<string, string> = {};
  for (const name of GLOBAL_SYSCTLS) {
    const value = readSysctl(name);
    if (value !== undefined) sysctls[name] = value;
  }
  const netnsDirMounted = isMountPoint(NETNS_DIR);
  const createdDirs = FIXED_DIRS.filter((dir) => !existsSync(dir));
  const write = (hostRoutes: string[]): void =>
    writeFileSync(
      MACHINE_FILE,
      JSON.stringify({ sysctls, hostRoutes, netnsDirMounted, createdDirs } satisfies MachineState, null, 2),
    );
  mkdirSync(STATE_DIR, { recursive: true, mode: 0o700 });
  write([]);
  write(change());
}

/**
 * Puts the recorded values back; `removeRoutes` deletes the host routes the
 * record lists, `unmount` the /run/netns mount when it was not there before
 * and no namespace is left in it.
 */
export function restoreMachine(removeRoutes: (routes: string[]) => void, unmount: (path: string) => void): void {
  let machine: MachineState;
  try {
    machine = JSON.parse(readFileSync(MACHINE_FILE, 'utf8')) as MachineState;
  } catch {
    return;
  }
  for (const [name, value] of Object.entries(machine.sysctls)) writeSysctl(name, value);
  removeRoutes(machine.hostRoutes);
  if (!machine.netnsDirMounted && isMountPoint(NETNS_DIR) && readdirSync(NETNS_DIR).length === 0) unmount(NETNS_DIR);
  for (const dir of machine.createdDirs) rmSync(dir, { recursive: true, force: true });
  rmSync(MACHINE_FILE, { force: true });
  if (readdirSync(STATE_DIR).length === 0) rmSync(STATE_DIR, { recursive: true, force: true });
}
