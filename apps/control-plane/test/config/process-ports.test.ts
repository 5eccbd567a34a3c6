// The control plane binary with Kubernetes-style flags: metrics and probes on
// separate addresses, leader election flags under their new names, a
// WARMPOOL_-prefixed variable, --version; and the standard Node metric names.
import { join } from 'node:path';
import { eventually, NodeScript, quietPort, runCommand, type RunResult, type TestCluster } from '@warmpool/harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTROL_PLANE_MAIN, requireBuilt } from '../support/fleet.js';
import { testWorld, type TestWorld } from '../support/world.js';

/** The control plane run to its end (--version, -h), behind the harness's watchdog. */
const run = (args: string[]): Promise<RunResult> =>
  runCommand({ command: process.execPath, args: [CONTROL_PLANE_MAIN, ...args] });

describe('the control plane process: ports, flags, version', () => {
  let world: TestWorld;
  let cluster: TestCluster;
  let proc: NodeScript;
  let metricsPort: number;
  let probePort: number;

  beforeAll(async () => {
    requireBuilt();
    world = await testWorld({ name: 'cp-ports', token: 'fleet-token' });
    cluster = world.cluster;
    metricsPort = await quietPort();
    probePort = await quietPort();
    proc = new NodeScript({
      name: 'control-plane',
      script: CONTROL_PLANE_MAIN,
      args: [
        `--metrics-bind-address=127.0.0.1:${metricsPort}`,
        `--health-probe-bind-address=127.0.0.1:${probePort}`,
        `--kubeconfig=${cluster.kubeconfigPath}`,
        '--leader-elect=true',
        '--leader-elect-lease-duration=4s',
        '--leader-elect-renew-deadline=3s',
        '--leader-elect-retry-period=500ms',
        '--leader-elect-resource-name=ports-test',
        `--token-file=${world.tokenFile}`,
      ],
      env: {
        WARMPOOL_API_TOKEN: '',
        WARMPOOL_RECONCILE_INTERVAL: '500ms',
        WARMPOOL_STALE_AFTER: '5s',
        POD_NAMESPACE: 'default',
      },
      logFile: join(world.dir, 'control-plane.log'),
    });
  });
  afterAll(() => world?.close());

  it('serves the probes alone on the probe address, and metrics (with the probes) on the metrics address', async () => {
    const readyz = await eventually(
      async () => {
        if (!proc.running) throw new Error(`exited:\n${proc.log()}`);
        const res = await fetch(`http://127.0.0.1:${probePort}/readyz`).catch(() => undefined);
        if (res?.status !== 200) return undefined;
        const body = (await res.json()) as { leader?: boolean; leaseHolder?: string };
        return body.leader ? body : undefined;
      },
      { what: 'the replica to lead and be ready', timeoutMs: 60_000 },
    );
    expect(readyz.leader).toBe(true);
    expect((await fetch(`http://127.0.0.1:${probePort}/healthz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${probePort}/metrics`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/healthz`)).status).toBe(200);
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metrics).toMatch(
      /^warmpool_build_info\{component="control-plane",version="\d+\.\d+\.\d+",node_version="v\d+/m,
    );
    // Node's defaults under their standard names, next to warmpool's own.
    expect(metrics).toMatch(/^process_cpu_user_seconds_total /m);
    expect(metrics).toMatch(/^nodejs_heap_size_used_bytes /m);
    expect(metrics).not.toMatch(/warmpool_controlplane_process_/);
    expect(metrics).toMatch(/^warmpool_controlplane_leader 1$/m);
    // The Lease carries the name given with --leader-elect-resource-name.
    expect((await cluster.kubectl(['get', 'lease', 'ports-test', '-n', 'default', '-o', 'name'])).stdout.trim()).toBe(
      'lease.coordination.k8s.io/ports-test',
    );
  });

  it('prints its version with --version and its flags with -h, and exits 0', async () => {
    const version = await run(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^control-plane \d+\.\d+\.\d+ \(node v/);
    const help = await run(['-h']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--leader-elect-lease-duration <duration>');
    expect(help.stdout).toContain('(was --lease-duration)');
    expect(help.stdout).toContain('[env WARMPOOL_METRICS_BIND_ADDRESS, METRICS_BIND_ADDRESS, CONTROL_PLANE_LISTEN]');
  });
});
