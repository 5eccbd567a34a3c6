// The control plane as a separate process, as it runs in a pod: so its RSS
// is its own and the fleet hosted by the benchmark does not share its event loop.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { APP_ENTRYPOINTS, freePort, ManagedChild, eventually, type TestCluster } from '@warmpool/harness';
import { histogram, parseSamples, sum, type HistogramSnapshot } from './prom-text.ts';
import { chartNodeFlags } from './chart-flags.ts';

export interface ControlPlaneProcess {
  readonly pid: number;
  readonly url: string;
  /** The control plane's own Prometheus text. */
  metrics(): Promise<string>;
  driverMetrics(): Promise<DriverMetrics>;
  /** The last generation handed out (the `generation` gauge). */
  generation(): Promise<number>;
  /**
   * Resolves with performance.now() once the control plane has handed out a
   * generation above `above` (a round of pushes left its reconcile), polling
   * its /metrics every `pollMs` (default 2 ms); undefined after `timeoutMs`.
   */
  roundAfter(above: number, timeoutMs: number, pollMs?: number): Promise<number | undefined>;
  /**
   * Resolves once the claim index is not recovering (`claim_index_recovering` 0): a control plane on a Redis it has
   * not written before starts a recovery, during which every batch lists every node first. Measure claims after it.
   */
  claimIndexSettled(timeoutMs?: number): Promise<void>;
  logTail(lines?: number): string;
  /** Its stdout and stderr (JSON logs, and whatever Node flags such as --trace-gc-nvp print); removed by stop(). */
  readonly logFile: string;
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
  /** Node.js options placed before the entrypoint; default: the chart's `controlPlane.nodeFlags`. */
  nodeArgs?: string[];
  /** The kubeconfig the control plane uses (default: the cluster's admin kubeconfig, a client certificate). */
  kubeconfigPath?: string;
  /** Environment variables set for the control plane on top of this process's. */
  env?: Record<string, string>;
}

export async function startControlPlaneProcess(options: StartControlPlaneOptions): Promise<ControlPlaneProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'warmpool-bench-cp-'));
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, `${options.token}\n`, { mode: 0o600 });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const logFile = join(dir, 'control-plane.log');
  const child = new ManagedChild({
    name: 'control-plane',
    command: process.execPath,
    args: [
      ...(options.nodeArgs ?? chartNodeFlags('controlPlane')),
      APP_ENTRYPOINTS.controlPlane,
      `--kubeconfig=${options.kubeconfigPath ?? options.cluster.kubeconfigPath}`,
      `--token-file=${tokenFile}`,
      `--listen=127.0.0.1:${port}`,
      `--interval=${options.interval}`,
      `--namespace=${options.namespace ?? 'default'}`,
      `--identity=bench-${process.pid}`,
      '--log-level=warn',
      ...(options.extraArgs ?? []),
    ],
    logFile,
    orphanCleanupDir: dir,
    ...(options.env !== undefined ? { env: { ...process.env, ...options.env } } : {}),
  });
  const stop = async (): Promise<void> => {
    await child.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await eventually(async () => (await fetch(`${url}/readyz`)).status === 200, {
      timeoutMs: 60_000,
      intervalMs: 100,
      what: () => `control plane at ${url} not ready; last log lines:\n${child.logTail()}`,
      abort: () =>
        child.running ? undefined : `control plane exited (${JSON.stringify(child.exitStatus)}):\n${child.logTail()}`,
    });
  } catch (error) {
    await stop();
    throw error;
  }
  const metrics = async (): Promise<string> => (await fetch(`${url}/metrics`)).text();
  const generation = async (): Promise<number> =>
    sum(parseSamples(await metrics(), 'warmpool_controlplane_generation'), 'warmpool_controlplane_generation');
  return {
    pid: child.pid,
    url,
    logFile,
    metrics,
    async claimIndexSettled(timeoutMs = 60_000) {
      const recovering = 'warmpool_controlplane_claim_index_recovering';
      await eventually(async () => sum(parseSamples(await metrics(), recovering), recovering) === 0, {
        timeoutMs,
        intervalMs: 100,
        what: () => 'the claim index still recovering',
      });
    },
    async driverMetrics() {
      const text = await metrics();
      // Node's default metrics carry their standard names (nodejs_*, process_*), not warmpool's prefix.
      const raw = ['warmpool_controlplane_', 'nodejs_', 'process_'].flatMap((prefix) => parseSamples(text, prefix));
      return {
        reconcile: histogram(raw, 'warmpool_controlplane_reconcile_duration_seconds'),
        setPools: histogram(raw, 'warmpool_controlplane_set_pools_duration_seconds'),
        raw,
      };
    },
    generation,
    async roundAfter(above, timeoutMs, pollMs = 2) {
      const deadline = performance.now() + timeoutMs;
      while (performance.now() < deadline) {
        if ((await generation()) > above) return performance.now();
        await new Promise((resolve) => setTimeout(resolve, pollMs));
      }
      return undefined;
    },
    logTail: (lines?: number) => child.logTail(lines),
    stop,
  };
}
