// Reaching a node agent on a real cluster from outside it: `kubectl
// port-forward` to the agent Pod on the inventory's node, tunnelled by the
// apiserver and that node's kubelet. The host never dials a pod IP (kind's pod
// network is not routable from the host). The apiserver's pod proxy is no
// alternative: the apiserver consumes the Authorization header, so the fleet
// token would never reach the agent.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findBinary, ManagedChild } from '@warmpool/harness';

export interface PortForward {
  /** 127.0.0.1:<local port>. */
  readonly address: string;
  close(): Promise<void>;
}

/**
 * Starts `kubectl port-forward` to `pod:remotePort` on a free local port, behind
 * the harness's watchdog; resolves once kubectl says it is forwarding.
 */
export async function portForward(
  kubeconfig: string,
  namespace: string,
  pod: string,
  remotePort: number,
  kind: 'pod' | 'svc' = 'pod',
): Promise<PortForward> {
  const dir = mkdtempSync(join(tmpdir(), 'warmpool-e2e-port-forward-'));
  const child = new ManagedChild({
    name: `kubectl port-forward ${namespace}/${pod}`,
    command: findBinary('kubectl'),
    args: [
      `--kubeconfig=${kubeconfig}`,
      'port-forward',
      '-n',
      namespace,
      '--address=127.0.0.1',
      `${kind}/${pod}`,
      `:${remotePort}`,
    ],
    logFile: join(dir, 'port-forward.log'),
    orphanCleanupDir: dir,
  });
  const close = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => {
    await child.stop(signal);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const port = await child.logged((line) => /^Forwarding from 127\.0\.0\.1:(\d+) ->/.exec(line)?.[1], {
      timeoutMs: 30_000,
      what: `kubectl port-forward to ${namespace}/${pod}:${remotePort} to start`,
    });
    return { address: `127.0.0.1:${port}`, close: () => close() };
  } catch (error) {
    await close('SIGKILL');
    throw error;
  }
}
