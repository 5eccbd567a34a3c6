// A Redis Sentinel topology on loopback for one test file: a primary, one
// replica and three Sentinels (quorum 2), each on a free port with a temp dir
// of its own, nothing persisted (as the chart's in-cluster Redis runs). Every
// process is a ManagedChild, so a killed test leaves none behind.
//
// Timings are small (down after 1 s) so a failover takes seconds: a test
// kills the primary (killPrimary) and waits until a Sentinel names another
// (waitForFailover).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findOnPath } from './binaries.js';
import { forgetRemoveAtExit, ManagedChild, removeAtExit } from './children.js';
import { freePort } from './ports.js';
import { startRedis, type TestRedis } from './redis.js';
import { fieldsOf, infoFields, respCommand, type RespTarget } from './resp.js';
import { eachIsolated } from './teardown.js';
import { eventually } from './wait.js';

export interface StartSentinelOptions {
  /** The primary's name in the Sentinels' configuration (default "warmpool"). */
  masterName?: string;
  /** The data nodes' `requirepass` (and `masterauth`); Sentinels log in with it. */
  password?: string;
  /** The Sentinels' own `requirepass`. */
  sentinelPassword?: string;
  /** Sentinel's down-after-milliseconds (default 1000). */
  downAfterMs?: number;
  /** Sentinel's failover-timeout (default 5000). */
  failoverTimeoutMs?: number;
  /** Until the whole topology is up and known to every Sentinel (default 30 s). */
  readyTimeoutMs?: number;
}

export interface SentinelAddress {
  host: string;
  port: number;
}

export interface TestSentinelTopology {
  readonly masterName: string;
  /** The three Sentinels, as `host:port` strings for --redis-sentinels. */
  readonly sentinels: readonly string[];
  readonly sentinelAddresses: readonly SentinelAddress[];
  /** The primary and the replica, in start order (the first is the first primary). */
  readonly nodes: readonly TestRedis[];
  /** Every process of the topology (nodes, then Sentinels), e.g. to check that close() left none. */
  readonly pids: readonly number[];
  /** Where a Sentinel says the primary is now. */
  primaryAddress(): Promise<SentinelAddress>;
  /** SIGKILLs the node that is primary now; resolves with its address once it is gone. */
  killPrimary(): Promise<SentinelAddress>;
  /**
   * Until a Sentinel names a primary other than `from` (default: the one killed last), which it returns.
   * The default wait (60 s) outlasts Sentinel's TILT mode: a Sentinel whose timer was starved for over 2 s
   * (a loaded CI machine) does nothing for 30 s, and a split election waits twice the failover-timeout.
   */
  waitForFailover(options?: { from?: SentinelAddress; timeoutMs?: number }): Promise<SentinelAddress>;
  /** Stops every process and removes every temp dir; each step runs even when another fails. */
  close(): Promise<void>;
}

interface RunningSentinel {
  readonly child: ManagedChild;
  readonly dir: string;
  readonly target: RespTarget;
}

const SENTINELS = 3;
const QUORUM = 2;
const HOST = '127.0.0.1';

export async function startSentinelTopology(options: StartSentinelOptions = {}): Promise<TestSentinelTopology> {
  const command = findOnPath('redis-sentinel');
  if (command === undefined)
    throw new Error('redis-sentinel not found on PATH: run `make redis` (installs the Debian redis-sentinel package)');
  const masterName = options.masterName ?? 'warmpool';
  const nodes: TestRedis[] = [];
  const sentinels: RunningSentinel[] = [];
  let lastKilled: SentinelAddress | undefined;
  const close = (): Promise<void> => stopTopology(nodes, sentinels);

  try {
    await startTopology(command, masterName, options, nodes, sentinels);
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }

  const primaryAddress = (): Promise<SentinelAddress> => primaryNamedBy(sentinels, masterName);
  return {
    masterName,
    sentinels: sentinels.map((s) => `${s.target.host}:${s.target.port}`),
    sentinelAddresses: sentinels.map((s) => ({ host: s.target.host, port: s.target.port })),
    nodes,
    pids: [...nodes.map((n) => n.pid), ...sentinels.map((s) => s.child.pid)],
    primaryAddress,
    async killPrimary() {
      const address = await primaryAddress();
      const node = nodes.find((n) => n.host === address.host && n.port === address.port);
      if (node === undefined)
        throw new Error(`the primary ${address.host}:${address.port} is none of the topology's nodes`);
      await node.kill();
      lastKilled = address;
      return address;
    },
    async waitForFailover({ from = lastKilled, timeoutMs = 60_000 } = {}) {
      if (from === undefined)
        throw new Error('waitForFailover: no primary was killed; say which one to fail over from');
      return primaryOtherThan(from, sentinels, masterName, timeoutMs);
    },
    close,
  };
}

/**
 * Starts the primary, the replica and the Sentinels, each pushed onto `nodes` or `sentinels` as soon as it runs (so
 * that stopTopology after a failure here stops exactly what was started), then waits until every Sentinel knows them.
 */
async function startTopology(
  command: string,
  masterName: string,
  options: StartSentinelOptions,
  nodes: TestRedis[],
  sentinels: RunningSentinel[],
): Promise<void> {
  const auth = options.password !== undefined ? { password: options.password } : {};
  const primary = await startRedis({ ...auth, name: 'redis-primary' });
  nodes.push(primary);
  nodes.push(await startRedis({ ...auth, name: 'redis-replica', replicaOf: { host: HOST, port: primary.port } }));
  for (let i = 0; i < SENTINELS; i++) {
    sentinels.push(await startSentinel(command, i, { host: HOST, masterName, primaryPort: primary.port, options }));
  }
  await eventually(() => topologyKnown(nodes, sentinels, masterName), {
    timeoutMs: options.readyTimeoutMs ?? 30_000,
    intervalMs: 100,
    what: () =>
      `the Sentinels do not all know the primary, the replica and each other; last lines of sentinel-0:\n${sentinels[0]?.child.logTail() ?? ''}`,
    abort: () => {
      const exited = sentinels.find((s) => !s.child.running)?.child;
      return exited === undefined ? undefined : `${exited.name} exited (${JSON.stringify(exited.exitStatus)})`;
    },
  });
}

/** Sentinels first (none is left to react to a node going away), then the nodes; each step runs even when one fails. */
async function stopTopology(nodes: readonly TestRedis[], sentinels: readonly RunningSentinel[]): Promise<void> {
  const failures = await eachIsolated([
    ...sentinels.map((s) => async () => {
      await s.child.stop();
      rmSync(s.dir, { recursive: true, force: true });
      forgetRemoveAtExit(s.dir);
    }),
    ...nodes.map((node) => () => node.stop()),
  ]);
  if (failures.length > 0) throw new AggregateError(failures, 'the Sentinel topology did not stop cleanly');
}

/** Where the first running Sentinel that answers says the primary is. */
async function primaryNamedBy(sentinels: readonly RunningSentinel[], masterName: string): Promise<SentinelAddress> {
  for (const sentinel of sentinels) {
    if (!sentinel.child.running) continue;
    const reply = await respCommand(sentinel.target, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', masterName]).catch(
      () => undefined,
    );
    if (Array.isArray(reply) && typeof reply[0] === 'string' && typeof reply[1] === 'string')
      return { host: reply[0], port: Number(reply[1]) };
  }
  throw new Error(`no Sentinel names a primary for ${masterName}`);
}

/** Until a Sentinel names a primary other than `from`, which it returns. */
function primaryOtherThan(
  from: SentinelAddress,
  sentinels: readonly RunningSentinel[],
  masterName: string,
  timeoutMs: number,
): Promise<SentinelAddress> {
  return eventually(
    async () => {
      const now = await primaryNamedBy(sentinels, masterName).catch(() => undefined);
      return now !== undefined && (now.host !== from.host || now.port !== from.port) ? now : undefined;
    },
    {
      timeoutMs,
      intervalMs: 100,
      what: () =>
        `no Sentinel names a primary other than ${from.host}:${from.port}; last lines of sentinel-0:\n${sentinels[0]?.child.logTail() ?? ''}`,
    },
  );
}

async function startSentinel(
  command: string,
  index: number,
  setup: { host: string; masterName: string; primaryPort: number; options: StartSentinelOptions },
): Promise<RunningSentinel> {
  const { host, masterName, primaryPort, options } = setup;
  const port = await freePort(host);
  const dir = mkdtempSync(join(tmpdir(), 'warmpool-sentinel-'));
  removeAtExit(dir);
  // Sentinel rewrites its configuration file as it learns the topology: the file lives in its own dir.
  const configFile = join(dir, 'sentinel.conf');
  writeFileSync(
    configFile,
    [
      `port ${port}`,
      `bind ${host}`,
      `dir ${dir}`,
      'daemonize no',
      'loglevel notice',
      `sentinel monitor ${masterName} ${host} ${primaryPort} ${QUORUM}`,
      `sentinel down-after-milliseconds ${masterName} ${options.downAfterMs ?? 1_000}`,
      `sentinel failover-timeout ${masterName} ${options.failoverTimeoutMs ?? 5_000}`,
      `sentinel parallel-syncs ${masterName} 1`,
      ...(options.password !== undefined ? [`sentinel auth-pass ${masterName} ${options.password}`] : []),
      // The Sentinels' own password, which they also present to each other.
      ...(options.sentinelPassword !== undefined
        ? [`requirepass ${options.sentinelPassword}`, `sentinel sentinel-pass ${options.sentinelPassword}`]
        : []),
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  const child = new ManagedChild({
    name: `sentinel-${index}`,
    command,
    args: [configFile],
    logFile: join(dir, 'sentinel.log'),
    orphanCleanupDir: dir,
  });
  const target: RespTarget = {
    host,
    port,
    ...(options.sentinelPassword !== undefined ? { password: options.sentinelPassword } : {}),
  };
  return { child, dir, target };
}

/**
 * Ready for a failover: the replica is in sync, and every Sentinel sees the
 * primary up with one replica and the two other Sentinels (so a quorum can be
 * reached and a leader elected at once).
 */
async function topologyKnown(
  nodes: readonly TestRedis[],
  sentinels: readonly RunningSentinel[],
  masterName: string,
): Promise<boolean> {
  try {
    const replica = nodes[1];
    if (replica === undefined) return false;
    if (infoFields(await respCommand(replica.target, ['INFO', 'replication'])).master_link_status !== 'up')
      return false;
    for (const sentinel of sentinels) {
      const master = fieldsOf(await respCommand(sentinel.target, ['SENTINEL', 'MASTER', masterName]));
      if (master.flags !== 'master') return false;
      if (master['num-slaves'] !== '1' || master['num-other-sentinels'] !== String(SENTINELS - 1)) return false;
    }
    return true;
  } catch {
    return false;
  }
}
