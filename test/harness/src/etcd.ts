// One etcd member on loopback for one test cluster.
import { findBinary } from './binaries.js';
import { ManagedChild } from './children.js';
import { get } from './http.js';
import { eventually } from './wait.js';

export interface EtcdOptions {
  dataDir: string;
  clientPort: number;
  peerPort: number;
  logFile: string;
  orphanCleanupDir?: string;
  readyTimeoutMs?: number;
}

export function etcdArgs(options: EtcdOptions): string[] {
  const client = `http://127.0.0.1:${options.clientPort}`;
  const peer = `http://127.0.0.1:${options.peerPort}`;
  return [
    '--name=warmpool',
    `--data-dir=${options.dataDir}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=warmpool=${peer}`,
    // A test cluster's data is thrown away: skipping fsync makes every write cheap.
    '--unsafe-no-fsync',
    // A single member has no peer to lose touch with; short raft timers make it
    // elect itself in ~100 ms instead of ~600 ms.
    '--heartbeat-interval=10',
    '--election-timeout=100',
    '--log-level=warn',
  ];
}

export interface RunningEtcd {
  child: ManagedChild;
  url: string;
}

export async function startEtcd(options: EtcdOptions): Promise<RunningEtcd> {
  const child = new ManagedChild({
    name: 'etcd',
    command: findBinary('etcd'),
    args: etcdArgs(options),
    logFile: options.logFile,
    ...(options.orphanCleanupDir === undefined ? {} : { orphanCleanupDir: options.orphanCleanupDir }),
  });
  const url = `http://127.0.0.1:${options.clientPort}`;
  try {
    await eventually(async () => (await get(`${url}/health`)).status === 200, {
      timeoutMs: options.readyTimeoutMs ?? 30_000,
      intervalMs: 25,
      what: () => `etcd at ${url} is not healthy; last log lines:\n${child.logTail()}`,
      abort: () => (child.running ? undefined : `etcd exited (${JSON.stringify(child.exitStatus)})`),
    });
  } catch (error) {
    await child.stop('SIGTERM', 1000);
    throw error;
  }
  return { child, url };
}
