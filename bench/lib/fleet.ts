// A fleet of simulated nodes in one process: per node, a fake-sandboxd core
// served over HTTP and a real node agent in front of it, each on its own
// loopback port, each with a core/v1 Node and publishing its NodeInventory to
// the real apiserver. The control plane cannot tell them from real nodes.
import type { KubeConfig } from '@kubernetes/client-node';
import { CoreV1Api } from '@kubernetes/client-node';
import type { PoolTarget } from '@warmpool/api';
import {
  startFakeSandboxd,
  type FakeSandboxd,
  type FakeSandboxdOptions,
  type RunningFakeSandboxd,
} from '@warmpool/fake-sandboxd';
import { nodeObject } from '@warmpool/harness';
import { createNodeAgent, KubeInventoryWriter, type NodeAgent, type NodeAgentOptions } from '@warmpool/node-agent';

export interface SimNode {
  readonly index: number;
  readonly name: string;
  readonly core: FakeSandboxd;
  readonly sandboxd: RunningFakeSandboxd;
  readonly agent: NodeAgent;
  /** host:port, the NodeInventory's spec.address. */
  readonly agentAddress: string;
}

export type AgentTuning = Pick<
  NodeAgentOptions,
  'publishIntervalMs' | 'minPublishGapMs' | 'pollIntervalMs' | 'sandboxdConnections' | 'capacity'
>;

export interface FleetOptions {
  nodes: number;
  kubeConfig: KubeConfig;
  token: string;
  /** Node i is `<prefix><i, 4 digits>` (default `sim-node-`). */
  namePrefix?: string;
  /** The first node's i (default 0): a fleet split over several hosts numbers its nodes apart. */
  firstIndex?: number;
  sandboxd?: Omit<FakeSandboxdOptions, 'advertise'>;
  agent?: AgentTuning;
  /** Nodes started at once (default 25). */
  concurrency?: number;
  /** Called after each SetPools a node's sandboxd applies, with performance.now(). */
  onSetPools?: (node: SimNode, pools: readonly PoolTarget[], at: number) => void;
  /** Startup progress. */
  log?: (line: string) => void;
}

export interface Fleet {
  readonly nodes: readonly SimNode[];
  /** Every agent published its NodeInventory and answers /readyz. */
  readonly startupMs: number;
  close(): Promise<void>;
}

async function inBatches<T>(count: number, concurrency: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array<T>(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await task(i);
      }
    }),
  );
  return results;
}

export async function startFleet(options: FleetOptions): Promise<Fleet> {
  const started = performance.now();
  const prefix = options.namePrefix ?? 'sim-node-';
  const nodesApi = options.kubeConfig.makeApiClient(CoreV1Api);
  // One writer (one connection pool to the apiserver) for the whole fleet, as
  // a benchmark host should; each agent still writes only its own object.
  const writer = new KubeInventoryWriter(options.kubeConfig);
  const nodes: SimNode[] = [];
  const close = async (): Promise<void> => {
    await inBatches(nodes.length, 100, async (i) => {
      const node = nodes[i];
      await node?.agent.close();
      await node?.sandboxd.close();
    });
  };
  try {
    await inBatches(options.nodes, options.concurrency ?? 25, async (i) => {
      const name = `${prefix}${String((options.firstIndex ?? 0) + i).padStart(4, '0')}`;
      await nodesApi.createNode({ body: nodeObject(name, '127.0.0.1') });
      const sandboxd = await startFakeSandboxd({
        ...options.sandboxd,
        apiToken: options.token,
        host: '127.0.0.1',
        port: 0,
      });
      const agent = createNodeAgent({
        sandboxdUrl: sandboxd.url,
        token: options.token,
        listen: { host: '127.0.0.1', port: 0 },
        nodeName: name,
        inventory: writer,
        closeTimeoutMs: 2_000,
        ...options.agent,
      });
      const { address } = await agent.start();
      const node: SimNode = {
        index: i,
        name,
        core: sandboxd.core,
        sandboxd,
        agent,
        agentAddress: `${address.host}:${address.port}`,
      };
      nodes.push(node);
      const onSetPools = options.onSetPools;
      if (onSetPools) {
        // PUT /v1/pools applies through replacePools (setPools is its in-process shorthand).
        const core = sandboxd.core;
        const replacePools = core.replacePools.bind(core);
        core.replacePools = (pools) => {
          const answer = replacePools(pools);
          onSetPools(node, pools, performance.now());
          return answer;
        };
      }
      if ((i + 1) % 100 === 0) options.log?.(`  ${i + 1}/${options.nodes} nodes started`);
    });
    nodes.sort((a, b) => a.index - b.index);
    const deadline = Date.now() + 120_000 + options.nodes * 100;
    for (;;) {
      const waiting = nodes.filter((node) => node.agent.notReadyReasons().length > 0);
      if (waiting.length === 0) break;
      if (Date.now() > deadline)
        throw new Error(
          `${waiting.length} agents not ready, e.g. ${waiting[0]?.name}: ${waiting[0]?.agent.notReadyReasons().join('; ')}`,
        );
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { nodes, startupMs: performance.now() - started, close };
}

/** Σ over the fleet of one key's warm target and warm count, read from the cores (no HTTP). */
export function fleetTotals(nodes: readonly SimNode[], template: string): { target: number; warm: number } {
  let target = 0;
  let warm = 0;
  for (const node of nodes) {
    for (const pool of node.core.info().pools) {
      if (pool.key.template !== template) continue;
      target += pool.target;
      warm += pool.warm;
    }
  }
  return { target, warm };
}
