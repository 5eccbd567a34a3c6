// An in-process control plane for the specs, with short timings and its log in a file.
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestCluster } from '@warmpool/harness';
import { loadKubeConfig } from '@warmpool/kube';
import { createLogger } from '@warmpool/runtime';
import { createControlPlane } from '../../src/control-plane.js';
import type { ControlPlane, ControlPlaneOptions } from '../../src/options.js';

export const FAST = {
  intervalMs: 500,
  staleAfterMs: 3_000,
  leaseDurationMs: 2_000,
  renewDeadlineMs: 1_500,
  retryPeriodMs: 300,
} as const;

let instances = 0;

export async function startControlPlane(
  cluster: TestCluster,
  dir: string,
  namespace: string,
  overrides: Partial<ControlPlaneOptions> & { token: ControlPlaneOptions['token'] },
): Promise<ControlPlane> {
  const n = ++instances;
  const logFile = join(dir, `control-plane-${n}.log`);
  const controlPlane = createControlPlane({
    // Each replica gets its own KubeConfig object, as separate processes would.
    kubeConfig: loadKubeConfig(cluster.kubeconfigPath),
    namespace,
    identity: `cp-${n}`,
    leaseDurationMs: FAST.leaseDurationMs,
    renewDeadlineMs: FAST.renewDeadlineMs,
    retryPeriodMs: FAST.retryPeriodMs,
    setPools: { timeoutMs: 1_000 },
    listen: { host: '127.0.0.1', port: 0 },
    logger: createLogger('control-plane', { level: 'debug', write: (line) => appendFileSync(logFile, line + '\n') }),
    ...overrides,
    driver: { intervalMs: FAST.intervalMs, staleAfterMs: FAST.staleAfterMs, ...overrides.driver },
  });
  try {
    await controlPlane.start();
  } catch (err) {
    await controlPlane.close();
    throw err;
  }
  return controlPlane;
}
