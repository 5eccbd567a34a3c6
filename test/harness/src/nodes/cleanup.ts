// Undoing a node cluster from its state file alone: used by close(), by the
// guardian when the owner died, and by the next start for a cluster whose
// owner and guardian are both gone. Every step runs even when one before failed.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, rmdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  CLUSTER_RANGES,
  clusterStates,
  isLive,
  restoreMachine,
  STATE_DIR,
  stateFile,
  type ClusterState,
} from './machine-state.js';

const CNI_CACHE = '/var/lib/cni/results';

function quietly(what: string, step: () => void): void {
  try {
    step();
  } catch (error) {
    console.error(`warmpool nodes cleanup: ${what}: ${(error as Error).message}`);
  }
}

function pids(): number[] {
  return readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .map(Number)
    .filter((pid) => pid !== process.pid);
}

function netnsInode(name: string): number | undefined {
  try {
    return statSync(`/run/netns/${name}`).ino;
  } catch {
    return undefined;
  }
}

/** Every v1 hierarchy (and, unless `v1Only`, the v2 one) the machine mounts, by mount point. */
export function cgroupMounts(v1Only = false): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' '))
    .filter((f) => {
      const type = f[f.indexOf('-') + 1];
      return f.includes('-') && (type === 'cgroup' || (!v1Only && type === 'cgroup2'));
    })
    .map((f) => unescapeMount(f[4] ?? ''));
}

function unescapeMount(path: string): string {
  return path.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

function cgroupDirs(names: string[]): string[] {
  const dirs: string[] = [];
  const walk = (dir: string): void => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) if (entry.isDirectory()) walk(join(dir, entry.name));
    dirs.push(dir); // children first
  };
  for (const mount of cgroupMounts()) for (const name of names) walk(join(mount, name));
  return dirs;
}

/** The processes of the cluster: in its network namespace, in its cgroups, or run from its directory. */
function clusterPids(state: ClusterState): number[] {
  const found = new Set<number>();
  const inode = netnsInode(state.netns);
  for (const pid of pids()) {
    try {
      if (inode !== undefined && readlinkSync(`/proc/${pid}/ns/net`) === `net:[${inode}]`) found.add(pid);
      else if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(state.dataDir)) found.add(pid);
    } catch {
      // gone meanwhile
    }
  }
  for (const dir of cgroupDirs(state.cgroups)) {
    try {
      for (const line of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n'))
        if (line !== '' && Number(line) !== process.pid) found.add(Number(line));
    } catch {
      // removed meanwhile
    }
  }
  return [...found];
}

export function killClusterProcesses(state: ClusterState): void {
  for (let round = 0; round < 100; round++) {
    const left = clusterPids(state);
    if (left.length === 0) return;
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    execFileSync('sleep', ['0.1']);
  }
  console.error(`warmpool nodes cleanup: processes still alive: ${clusterPids(state).join(' ')}`);
}

/** Mount points at or below `dir`, deepest first. */
export function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => unescapeMount(line.split(' ')[4] ?? ''))
    .filter((mount) => mount === dir || mount.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
}

function unmountUnder(dir: string): void {
  for (let round = 0; round < 5; round++) {
    const mounts = [...new Set(mountsUnder(dir))];
    if (mounts.length === 0) return;
    try {
      execFileSync('umount', ['-l', ...mounts], { stdio: 'ignore' });
    } catch {
      // some were already gone with their parents; the next round sees what is left
    }
  }
}

function removeCgroups(names: string[]): void {
  for (const dir of cgroupDirs(names)) {
    try {
      rmdirSync(dir);
    } catch {
      // busy (a process left) or already gone
    }
  }
}

export function addHostRoutes(): string[] {
  const added: string[] = [];
  for (const range of Object.values(CLUSTER_RANGES)) {
    const existing = execFileSync('ip', ['route', 'show', 'exact', range], { encoding: 'utf8' });
    if (existing.trim() !== '') continue;
    execFileSync('ip', ['route', 'add', 'unreachable', range]);
    added.push(range);
  }
  return added;
}

function removeHostRoutes(routes: string[]): void {
  for (const range of routes)
    quietly(`route ${range}`, () => execFileSync('ip', ['route', 'del', 'unreachable', range], { stdio: 'ignore' }));
}

function removeCniCache(networks: string[]): void {
  if (!existsSync(CNI_CACHE)) return;
  for (const file of readdirSync(CNI_CACHE))
    if (networks.some((n) => file.startsWith(`${n}-`))) rmSync(join(CNI_CACHE, file), { force: true });
}

/** Everything the cluster of `state` left: processes, mounts, cgroups, its namespace, files; the machine last. */
export function cleanUpCluster(state: ClusterState): void {
  quietly('processes', () => killClusterProcesses(state));
  quietly('mounts', () => unmountUnder(state.dataDir));
  quietly('cgroups', () => removeCgroups(state.cgroups));
  if (netnsInode(state.netns) !== undefined)
    quietly('netns', () => execFileSync('ip', ['netns', 'delete', state.netns], { stdio: 'ignore' }));
  quietly('cni cache', () => removeCniCache(state.cniNetworks));
  if (process.env['WARMPOOL_KEEP_CLUSTER'] !== '1')
    quietly('data dir', () => rmSync(state.dataDir, { recursive: true, force: true }));
  rmSync(stateFile(state.id), { force: true });
  rmSync(join(STATE_DIR, `${state.id}.guardian.log`), { force: true });
  // The last cluster to go puts the machine back.
  if (!clusterStates().some((other) => other.id !== state.id && isLive(other)))
    restoreMachine(removeHostRoutes, (path) =>
      quietly(`unmount ${path}`, () => execFileSync('umount', [path], { stdio: 'ignore' })),
    );
}

/** Cleans up after clusters whose owner and guardian both died (a SIGKILL, a reboot of the test runner). */
export function reapDeadClusters(): void {
  for (const state of clusterStates()) if (!isLive(state)) cleanUpCluster(state);
}
