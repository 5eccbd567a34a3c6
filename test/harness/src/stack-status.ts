// What the local stack shows while it runs: READY/DESIRED per warm pool (from
// the pools' status, as `kubectl get swp` shows it) and the warm count per
// node (from each agent's GET /v1/info, i.e. straight from sandboxd).
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { nodeInfoSchema, SandboxWarmPoolType, type SandboxWarmPool } from '@warmpool/api';
import { replicasOf } from '@warmpool/pool-model';

export interface PoolProgress {
  namespace: string;
  name: string;
  ready: number;
  desired: number;
}

export interface NodeProgress {
  name: string;
  /** Booted, unclaimed sandboxes over every pool of the node; undefined when the agent did not answer. */
  warm: number | undefined;
  claimed: number | undefined;
}

export interface StackProgress {
  pools: PoolProgress[];
  nodes: NodeProgress[];
}

export interface ProgressSource {
  kubeConfig: KubeConfig;
  token: string;
  nodes: ReadonlyArray<{ name: string; agentUrl: string }>;
}

export async function readPools(kubeConfig: KubeConfig): Promise<PoolProgress[]> {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const list = (await api.listCustomObjectForAllNamespaces({
    group: SandboxWarmPoolType.group,
    version: SandboxWarmPoolType.version,
    resourcePlural: SandboxWarmPoolType.plural,
  })) as { items: SandboxWarmPool[] };
  return list.items
    .map((pool) => ({
      namespace: pool.metadata.namespace ?? '',
      name: pool.metadata.name ?? '',
      ready: pool.status?.readyReplicas ?? 0,
      desired: replicasOf(pool),
    }))
    .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
}

export async function readNode(node: { name: string; agentUrl: string }, token: string): Promise<NodeProgress> {
  try {
    const res = await fetch(`${node.agentUrl}/v1/info`, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(2000),
    });
    if (!res.ok) return { name: node.name, warm: undefined, claimed: undefined };
    const info = nodeInfoSchema.parse(await res.json());
    return { name: node.name, warm: info.pools.reduce((sum, pool) => sum + pool.warm, 0), claimed: info.claimed };
  } catch {
    return { name: node.name, warm: undefined, claimed: undefined };
  }
}

export async function readProgress(source: ProgressSource): Promise<StackProgress> {
  const [pools, nodes] = await Promise.all([
    readPools(source.kubeConfig),
    Promise.all(source.nodes.map((node) => readNode(node, source.token))),
  ]);
  return { pools, nodes };
}

/** Every pool has as many ready sandboxes as it wants, and at least one pool exists. */
export function allPoolsReady(progress: StackProgress): boolean {
  return progress.pools.length > 0 && progress.pools.every((pool) => pool.ready === pool.desired);
}

/** `  3.0s  swp default/python 20/30  │  warm: node-1 10 · node-2 10 · node-3 0` */
export function progressLine(progress: StackProgress, elapsedMs: number): string {
  const pools =
    progress.pools.length === 0
      ? 'no SandboxWarmPool'
      : progress.pools.map((p) => `swp ${p.namespace}/${p.name} ${p.ready}/${p.desired}`).join(', ');
  const nodes = progress.nodes.map((n) => `${n.name} ${n.warm ?? '?'}`).join(' · ');
  return `${(elapsedMs / 1000).toFixed(1).padStart(6)}s  ${pools}  │  warm: ${nodes}`;
}
