// Reaching a node agent on a real cluster from outside it: `kubectl
// port-forward` to the agent Pod on the inventory's node, tunnelled by the
// apiserver and that node's kubelet. The host never dials a pod IP (kind's pod
// network is not routable from the host). The apiserver's pod proxy is no
// alternative: the apiserver consumes the Authorization header, so the fleet
// token would never reach the agent.
import { spawn, type ChildProcess } from 'node:child_process';
import { findBinary } from '@warmpool/harness';

export interface PortForward {
  /** 127.0.0.1:<local port>. */
  readonly address: string;
  close(): void;
}

/** Starts `kubectl port-forward` to `pod:remotePort` on a free local port; resolves once kubectl says it is forwarding. */
export function portForward(
  kubeconfig: string,
  namespace: string,
  pod: string,
  remotePort: number,
): Promise<PortForward> {
  const child: ChildProcess = spawn(
    findBinary('kubectl'),
    [
      `--kubeconfig=${kubeconfig}`,
      'port-forward',
      '-n',
      namespace,
      '--address=127.0.0.1',
      `pod/${pod}`,
      `:${remotePort}`,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(
      () =>
        fail(
          new Error(`kubectl port-forward to ${namespace}/${pod}:${remotePort} did not start within 30 s:\n${output}`),
        ),
      30_000,
    );
    const fail = (err: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const match = /Forwarding from 127\.0\.0\.1:(\d+) ->/.exec(output);
      if (!match) return;
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stdout?.resume();
      resolve({ address: `127.0.0.1:${match[1]}`, close: () => child.kill('SIGTERM') });
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.once('error', fail);
    child.once('exit', (code) => fail(new Error(`kubectl port-forward exited ${code}:\n${output}`)));
  });
}
