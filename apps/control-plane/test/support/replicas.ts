// Control-plane replicas as processes (dist/main.js) on one Lease, and what
// their /readyz says: for the specs that kill, pause and restart leaders, or
// kill a replica whose claim worker holds jobs.
import { join } from 'node:path';
import { addressInUse, eventually, NodeScript, quietPort, type TestCluster } from '@warmpool/harness';
import { CONTROL_PLANE_MAIN } from './fleet.js';

export interface LeaseTiming {
  duration: number;
  renewDeadline: number;
  retryPeriod: number;
}

/** The Lease timing of the process specs: short, yet long enough for a shared, slow machine. */
export const PROCESS_LEASE: LeaseTiming = { duration: 4_000, renewDeadline: 3_000, retryPeriod: 500 };

export interface Replica {
  identity: string;
  /** Its health server (/readyz, /metrics). */
  port: number;
  /** Its claim API, when started with `claims`. */
  claimsUrl: string | undefined;
  proc: NodeScript;
}

export interface Readiness {
  status: number;
  ready: boolean;
  leader: boolean;
  reasons: string[];
}

export interface ReplicaOptions {
  cluster: TestCluster;
  /** Where logs go. */
  dir: string;
  namespace: string;
  tokenFile: string;
  lease: LeaseTiming;
  /** --set-pools-timeout, e.g. '1s'; the binary's default when absent. */
  setPoolsTimeout?: string;
}

export interface ReplicaExtras {
  /** false starts it without the fleet token. */
  token?: boolean;
  /**
   * Serves the claim API on a port of its own with its queue in this Redis; started means ready to claim
   * (/readyz/claims 200).
   */
  claims?: { redisUrl: string };
  /**
   * More flags, after the others (a later flag wins); a function is given the claim API's URL (e.g. to advertise it).
   */
  args?: string[] | ((urls: { claimsUrl: string | undefined }) => string[]);
  /** Added to its environment. */
  env?: NodeJS.ProcessEnv;
  /** How long it may take to start (eventually's default otherwise). */
  timeoutMs?: number;
}

/**
 * Starts a replica and waits until it serves /readyz, or with `claims` until it
 * is ready to claim; other ports when its ports were taken meanwhile.
 */
export async function startReplica(
  options: ReplicaOptions,
  identity: string,
  extra: ReplicaExtras = {},
): Promise<Replica> {
  for (let attempt = 1; ; attempt++) {
    const port = await quietPort();
    const claimsPort = extra.claims === undefined ? undefined : await quietPort();
    const claimsUrl = claimsPort === undefined ? undefined : `http://127.0.0.1:${claimsPort}`;
    const more = typeof extra.args === 'function' ? extra.args({ claimsUrl }) : (extra.args ?? []);
    const args = [
      '--listen',
      `127.0.0.1:${port}`,
      ...(extra.claims === undefined
        ? []
        : ['--claims-listen', `127.0.0.1:${claimsPort}`, '--redis-url', extra.claims.redisUrl]),
      '--kubeconfig',
      options.cluster.kubeconfigPath,
      '--namespace',
      options.namespace,
      '--identity',
      identity,
      '--interval',
      '500ms',
      '--stale-after',
      '5s',
      ...(options.setPoolsTimeout === undefined ? [] : ['--set-pools-timeout', options.setPoolsTimeout]),
      '--lease-duration',
      `${options.lease.duration}ms`,
      '--renew-deadline',
      `${options.lease.renewDeadline}ms`,
      '--retry-period',
      `${options.lease.retryPeriod}ms`,
      '--log-level',
      'debug',
      ...(extra.token === false ? [] : ['--token-file', options.tokenFile]),
      ...more,
    ];
    const proc = new NodeScript({
      name: identity,
      script: CONTROL_PLANE_MAIN,
      args,
      env: { WARMPOOL_API_TOKEN: '', ...extra.env },
      logFile: join(options.dir, `${identity}-${attempt}.log`),
    });
    const started = { identity, port, claimsUrl, proc };
    try {
      await eventually(
        async () => {
          if (extra.claims === undefined) return (await readiness(started)).status > 0;
          return (await readinessAt(started, '/readyz/claims')).status === 200;
        },
        {
          what: extra.claims === undefined ? `${identity} to serve` : `${identity} to be ready to claim`,
          abort: () => (proc.running ? undefined : `${identity} exited:\n${proc.log()}`),
          ...(extra.timeoutMs !== undefined ? { timeoutMs: extra.timeoutMs } : {}),
        },
      );
    } catch (err) {
      if (attempt >= 5 || !addressInUse(proc.log())) throw err;
      continue;
    }
    return started;
  }
}

/** What the replica's /readyz says (status 0 when it does not answer). */
export function readiness(r: Replica): Promise<Readiness> {
  return readinessAt(r, '/readyz');
}

/** The same from /readyz or /readyz/claims, each call bounded by 2 s. */
async function readinessAt(r: Replica, path: '/readyz' | '/readyz/claims'): Promise<Readiness> {
  try {
    const res = await fetch(`http://127.0.0.1:${r.port}${path}`, { signal: AbortSignal.timeout(2_000) });
    const body = (await res.json()) as { ready?: boolean; leader?: boolean; reasons?: string[] };
    return {
      status: res.status,
      ready: body.ready === true,
      leader: body.leader === true,
      reasons: body.reasons ?? [],
    };
  } catch {
    return { status: 0, ready: false, leader: false, reasons: [] };
  }
}

/** The identities of those that say they lead. */
export async function leaders(of: readonly Replica[]): Promise<string[]> {
  const states = await Promise.all(of.map(async (r) => ({ r, state: await readiness(r) })));
  return states.filter((s) => s.state.leader).map((s) => s.r.identity);
}

/** The epochs a replica logged taking (one per term, more when it ran out of counter). */
export function epochsTaken(r: Replica): number[] {
  return epochsLogged(r, 'took a generation epoch');
}

/** The epochs a replica continued into a new term of its own (it re-acquired its Lease, no leader took one since). */
export function epochsContinued(r: Replica): number[] {
  return epochsLogged(r, "continued the previous term's generation epoch (no leader took one since)");
}

function epochsLogged(r: Replica, msg: string): number[] {
  return r.proc
    .logLines()
    .filter((l) => l['msg'] === msg && typeof l['epoch'] === 'number')
    .map((l) => l['epoch'] as number);
}
