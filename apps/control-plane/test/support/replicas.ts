// Control-plane replicas as processes (dist/main.js) on one Lease, and what
// their /readyz says: for the specs that kill, pause and restart leaders.
import { join } from 'node:path';
import { addressInUse, eventually, NodeScript, quietPort, type TestCluster } from '@warmpool/harness';
import { CONTROL_PLANE_MAIN } from './fleet.js';

export interface LeaseTiming {
  duration: number;
  renewDeadline: number;
  retryPeriod: number;
}

export interface Replica {
  identity: string;
  port: number;
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
}

/** Starts a replica and waits until it serves /readyz (another port if its port was taken); `token: false` starts it without one. */
export async function startReplica(
  options: ReplicaOptions,
  identity: string,
  extra: { token?: boolean } = {},
): Promise<Replica> {
  for (let attempt = 1; ; attempt++) {
    const port = await quietPort();
    const args = [
      '--listen',
      `127.0.0.1:${port}`,
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
      '--set-pools-timeout',
      '1s',
      '--lease-duration',
      `${options.lease.duration}ms`,
      '--renew-deadline',
      `${options.lease.renewDeadline}ms`,
      '--retry-period',
      `${options.lease.retryPeriod}ms`,
      '--log-level',
      'debug',
      ...(extra.token === false ? [] : ['--token-file', options.tokenFile]),
    ];
    const proc = new NodeScript({
      name: identity,
      script: CONTROL_PLANE_MAIN,
      args,
      env: { WARMPOOL_API_TOKEN: '' },
      logFile: join(options.dir, `${identity}-${attempt}.log`),
    });
    const started = { identity, port, proc };
    try {
      await eventually(
        async () => {
          if (!proc.running) throw new Error(`${identity} exited:\n${proc.log()}`);
          return (await readiness(started)).status > 0;
        },
        { what: `${identity} to serve` },
      );
    } catch (err) {
      if (attempt >= 5 || !addressInUse(proc.log())) throw err;
      continue;
    }
    return started;
  }
}

export async function readiness(r: Replica): Promise<Readiness> {
  try {
    const res = await fetch(`http://127.0.0.1:${r.port}/readyz`, { signal: AbortSignal.timeout(2_000) });
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
  return r.proc
    .logLines()
    .filter((l) => l['msg'] === 'took a generation epoch' && typeof l['epoch'] === 'number')
    .map((l) => l['epoch'] as number);
}
