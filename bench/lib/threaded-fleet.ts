// A simulated fleet spread over worker threads, so the simulation is not one
// event loop on one core: each thread hosts a slice of the nodes (node agent +
// fake-sandboxd each, each on its own loopback port, exactly as fleet.ts), and
// every applied SetPools is reported here with the time it happened in its
// thread. A benchmark then measures the control plane, not the simulator's
// queue: with one thread, 100 pushes were ≥ 100 ms of serial host CPU.
import { Worker } from 'node:worker_threads';
import type { PoolTarget } from '@warmpool/api';
import type { FleetOptions } from './fleet.ts';
import type { FleetWorkerCommand, FleetWorkerData, FleetWorkerMessage } from './fleet-worker.ts';

export interface ThreadedFleetOptions extends Pick<
  FleetOptions,
  'nodes' | 'token' | 'namePrefix' | 'sandboxd' | 'agent' | 'concurrency' | 'log'
> {
  /** The apiserver, as a kubeconfig file each thread loads. */
  kubeconfigPath: string;
  /** Worker threads (default 2); nodes are split evenly, in index order. */
  threads?: number;
  /** Called for each SetPools a node's sandboxd applies, with that moment as this thread's performance.now(). */
  onSetPools?: (node: { name: string }, pools: readonly PoolTarget[], at: number) => void;
}

export interface ThreadedFleet {
  readonly threads: number;
  /** The slowest thread's startup (every agent published its NodeInventory and answers /readyz). */
  readonly startupMs: number;
  /** Starts measuring the event-loop delay of every thread. */
  startLagMonitor(): void;
  /** The worst thread's event-loop delay since startLagMonitor(). */
  stopLagMonitor(): Promise<{ p99Ms: number; maxMs: number }>;
  close(): Promise<void>;
}

export async function startThreadedFleet(options: ThreadedFleetOptions): Promise<ThreadedFleet> {
  const threads = Math.max(1, Math.min(options.threads ?? 2, options.nodes));
  const workers: Worker[] = [];
  const exited: Array<Promise<void>> = [];
  const lagWaiters: Array<(lag: { p99Ms: number; maxMs: number }) => void> = [];
  const ready: Array<Promise<number>> = [];
  let firstIndex = 0;
  for (let t = 0; t < threads; t++) {
    const nodes = Math.floor(options.nodes / threads) + (t < options.nodes % threads ? 1 : 0);
    const data: FleetWorkerData = {
      kubeconfigPath: options.kubeconfigPath,
      token: options.token,
      firstIndex,
      nodes,
      ...(options.namePrefix === undefined ? {} : { namePrefix: options.namePrefix }),
      ...(options.sandboxd === undefined ? {} : { sandboxd: options.sandboxd }),
      ...(options.agent === undefined ? {} : { agent: options.agent }),
      ...(options.concurrency === undefined
        ? {}
        : { concurrency: Math.max(1, Math.ceil(options.concurrency / threads)) }),
    };
    firstIndex += nodes;
    const worker = new Worker(new URL('./fleet-worker.ts', import.meta.url), { workerData: data });
    workers.push(worker);
    exited.push(new Promise<void>((resolve) => worker.once('exit', () => resolve())));
    ready.push(
      new Promise<number>((resolve, reject) => {
        worker.on('error', reject);
        worker.on('exit', (code) => reject(new Error(`fleet thread ${t} exited (${code}) before it was ready`)));
        worker.on('message', (message: FleetWorkerMessage) => {
          switch (message.kind) {
            case 'ready':
              options.log?.(`  thread ${t}: ${nodes} nodes up`);
              resolve(message.startupMs);
              break;
            case 'failed':
              reject(new Error(`fleet thread ${t}: ${message.message}`));
              break;
            case 'set-pools':
              options.onSetPools?.({ name: message.name }, message.pools, message.at - performance.timeOrigin);
              break;
            case 'lag':
              lagWaiters.shift()?.(message);
              break;
            case 'closed':
              break;
          }
        });
      }),
    );
  }
  const send = (command: FleetWorkerCommand): void => {
    for (const worker of workers) worker.postMessage(command);
  };
  const close = async (): Promise<void> => {
    send({ kind: 'close' });
    // A thread stuck in its close still goes: the fleet must never outlive the benchmark.
    const deadline = setTimeout(() => {
      for (const worker of workers) void worker.terminate();
    }, 30_000);
    await Promise.all(exited);
    clearTimeout(deadline);
  };
  let startups: number[];
  try {
    startups = await Promise.all(ready);
  } catch (error) {
    await Promise.all(workers.map((worker) => worker.terminate()));
    await Promise.all(exited);
    throw error;
  }
  return {
    threads,
    startupMs: Math.max(...startups),
    startLagMonitor: () => send({ kind: 'lag-start' }),
    async stopLagMonitor() {
      const lags = workers.map(
        () => new Promise<{ p99Ms: number; maxMs: number }>((resolve) => lagWaiters.push(resolve)),
      );
      send({ kind: 'lag-stop' });
      const all = await Promise.all(lags);
      return { p99Ms: Math.max(...all.map((l) => l.p99Ms)), maxMs: Math.max(...all.map((l) => l.maxMs)) };
    },
    close,
  };
}
