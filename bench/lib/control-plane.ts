// The control plane as a separate process, as it runs in a pod: so its RSS
// is its own and the fleet hosted by the benchmark does not share its event loop.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { APP_ENTRYPOINTS, freePort, ManagedChild, waitUntil, type TestCluster } from '@warmpool/harness';
import { histogram, parseSamples, type HistogramSnapshot } from './prom-text.ts';

export interface ControlPlaneProcess {
  readonly pid: number;
  readonly url: string;
  /** The control plane's own Prometheus text. */
  metrics(): Promise<string>;
  driverMetrics(): Promise<DriverMetrics>;
  logTail(lines?: number): string;
  stop(): Promise<void>;
}

export interface DriverMetrics {
  reconcile: HistogramSnapshot;
  setPools: HistogramSnapshot;
  /** Every sample prefixed warmpool_controlplane_. */
  raw: ReturnType<typeof parseSamples>;
}

export interface StartControlPlaneOptions {
  cluster: TestCluster;
  token: string;
  /** Go-style duration, e.g. `5s`. */
  interval: string;
  namespace?: string;
  extraArgs?: string[];
}

export async function startControlPlaneProcess(options: StartControlPlaneOptions): Promise<ControlPlaneProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'warmpool-bench-cp-'));
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, `${options.token}\n`, { mode: 0o600 });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = new ManagedChild({
    name: 'control-plane',
    command: process.execPath,
    args: [
      APP_ENTRYPOINTS.controlPlane,
      `--kubeconfig=${options.cluster.kubeconfigPath}`,
      `--token-file=${tokenFile}`,
      `--listen=127.0.0.1:${port}`,
      `--interval=${options.interval}`,
      `--namespace=${options.namespace ?? 'default'}`,
      `--identity=bench-${process.pid}`,
      '--log-level=warn',
      ...(options.extraArgs ?? []),
    ],
    logFile: join(dir, 'control-plane.log'),
    orphanCleanupDir: dir,
  });
  const stop = async (): Promise<void> => {
    await child.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitUntil(async () => (await fetch(`${url}/readyz`)).status === 200, {
      timeoutMs: 60_000,
      intervalMs: 100,
      describe: () => `control plane at ${url} not ready; last log lines:\n${child.logTail()}`,
      abort: () => (child.running ? undefined : `control plane exited (${JSON.stringify(child.exitStatus)}):\n${child.logTail()}`),
    });
  } catch (error) {
    await stop();
    throw error;
  }
  const metrics = async (): Promise<string> => (await fetch(`${url}/metrics`)).text();
  return {
    pid: child.pid,
    url,
    metrics,
    async driverMetrics() {
      const raw = parseSamples(await metrics(), 'warmpool_controlplane_');
      return {
        reconcile: histogram(raw, 'warmpool_controlplane_reconcile_duration_seconds'),
        setPools: histogram(raw, 'warmpool_controlplane_set_pools_duration_seconds'),
        raw,
      };
    },
    logTail: (lines?: number) => child.logTail(lines),
    stop,
  };
}
