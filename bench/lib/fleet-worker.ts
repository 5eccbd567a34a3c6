// One worker thread of a threaded fleet (threaded-fleet.ts): hosts a slice of
// the simulated nodes with startFleet, reports every applied SetPools to the
// main thread with its time, and closes its slice when told.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { KubeConfig } from '@kubernetes/client-node';
import { startFleet, type AgentTuning } from './fleet.ts';
import type { FakeSandboxdOptions } from '@warmpool/fake-sandboxd';

export interface FleetWorkerData {
  kubeconfigPath: string;
  token: string;
  firstIndex: number;
  nodes: number;
  namePrefix?: string;
  sandboxd?: Omit<FakeSandboxdOptions, 'advertise'>;
  agent?: AgentTuning;
  concurrency?: number;
}

export type FleetWorkerMessage =
  | { kind: 'ready'; startupMs: number }
  | { kind: 'failed'; message: string }
  /** `at`: performance.timeOrigin + performance.now() in the worker, i.e. comparable across threads. */
  | {
      kind: 'set-pools';
      name: string;
      pools: ReadonlyArray<{ template: string; net: string; size: string; warm: number }>;
      at: number;
    }
  | { kind: 'lag'; p99Ms: number; maxMs: number }
  | { kind: 'closed' };

export type FleetWorkerCommand = { kind: 'lag-start' } | { kind: 'lag-stop' } | { kind: 'close' };

const port = parentPort;
if (port === null) throw new Error('fleet-worker.ts runs as a worker thread');
const data = workerData as FleetWorkerData;
const post = (message: FleetWorkerMessage): void => port.postMessage(message);
const lag = monitorEventLoopDelay({ resolution: 5 });

try {
  const fleet = await startFleet({
    nodes: data.nodes,
    firstIndex: data.firstIndex,
    kubeConfig: clientNodeKubeConfig(data.kubeconfigPath),
    token: data.token,
    ...(data.namePrefix === undefined ? {} : { namePrefix: data.namePrefix }),
    ...(data.sandboxd === undefined ? {} : { sandboxd: data.sandboxd }),
    ...(data.agent === undefined ? {} : { agent: data.agent }),
    ...(data.concurrency === undefined ? {} : { concurrency: data.concurrency }),
    onSetPools: (node, pools, at) =>
      post({ kind: 'set-pools', name: node.name, pools, at: performance.timeOrigin + at }),
  });
  port.on('message', (command: FleetWorkerCommand) => {
    switch (command.kind) {
      case 'lag-start':
        lag.reset();
        lag.enable();
        break;
      case 'lag-stop':
        lag.disable();
        post({ kind: 'lag', p99Ms: lag.percentile(99) / 1e6, maxMs: lag.max / 1e6 });
        break;
      case 'close':
        void fleet.close().finally(() => {
          post({ kind: 'closed' });
          // Ends this thread only; idle keep-alive sockets to the apiserver must not hold it open.
          process.exit(0);
        });
        break;
    }
  });
  post({ kind: 'ready', startupMs: fleet.startupMs });
} catch (error) {
  post({ kind: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exit(1);
}

/** client-node's own KubeConfig: the fleet also creates its Node objects through client-node's API classes. */
function clientNodeKubeConfig(path: string): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(path);
  return kubeConfig;
}
