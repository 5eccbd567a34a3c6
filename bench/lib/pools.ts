// Templates and warm pools as a user applies them, written with the same
// requests kubectl sends (server-side apply, merge patch).
import type { KubeConfig } from '@kubernetes/client-node';
import { SandboxTemplateType, SandboxWarmPoolType, type SandboxTemplate, type SandboxWarmPool } from '@warmpool/api';
import { samplePool, sampleTemplate } from '@warmpool/harness';
import { isKubeApiError, ResourceClient, retryOnConflict } from '@warmpool/kube';
import { replicasOf } from '@warmpool/pool-model';

export const FIELD_MANAGER = 'warmpool-bench';

export interface PoolSpec {
  name: string;
  /** The template's image: the node-level pool key. One per pool, so pools never share a key. */
  image: string;
  replicas: number;
}

export class Pools {
  readonly namespace: string;
  readonly templates: ResourceClient<SandboxTemplate>;
  readonly pools: ResourceClient<SandboxWarmPool>;

  constructor(kubeConfig: KubeConfig, namespace = 'default') {
    this.namespace = namespace;
    this.templates = new ResourceClient<SandboxTemplate>(kubeConfig, SandboxTemplateType);
    this.pools = new ResourceClient<SandboxWarmPool>(kubeConfig, SandboxWarmPoolType);
  }

  /**
   * Template first, then the pool, both by server-side apply (idempotent, so an apply the apiserver timed out on is
   * sent again, as kubectl's user would).
   */
  async apply(spec: PoolSpec): Promise<void> {
    const options = { namespace: this.namespace, ...spec };
    await whileOverloaded(() => this.templates.apply(sampleTemplate(options), { fieldManager: FIELD_MANAGER }));
    await whileOverloaded(() => this.pools.apply(samplePool(options), { fieldManager: FIELD_MANAGER }));
  }

  async applyAll(specs: readonly PoolSpec[], concurrency = 16): Promise<void> {
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(concurrency, specs.length) }, async () => {
        while (next < specs.length) {
          const spec = specs[next++];
          if (spec) await this.apply(spec);
        }
      }),
    );
  }

  /** What `kubectl patch swp NAME --type=merge -p '{"spec":{"replicas":N}}'` sends. */
  async scale(name: string, replicas: number): Promise<void> {
    await this.pools.patch({ namespace: this.namespace, name }, { spec: { replicas } });
  }

  async list(): Promise<SandboxWarmPool[]> {
    return (await whileOverloaded(() => this.pools.list({ namespace: this.namespace }))).items;
  }

  async status(name: string): Promise<{ ready: number; replicas: number }> {
    const pool = await this.pools.get({ namespace: this.namespace, name });
    return { ready: pool.status?.readyReplicas ?? 0, replicas: pool.status?.replicas ?? 0 };
  }
}

/** Every pool's status says READY = DESIRED. */
export async function allReady(pools: Pools): Promise<{ ready: number; pools: number }> {
  const items = await pools.list();
  const ready = items.filter((p) => (p.status?.readyReplicas ?? -1) === replicasOf(p)).length;
  return { ready, pools: items.length };
}

/**
 * Retries what an overloaded apiserver refused for now (429, or a 5xx such as 504 "request did not complete within
 * requested timeout") a few times: on a shared machine the fill would otherwise abort the whole benchmark. Only for
 * idempotent setup requests; the patches the benchmark times are never retried.
 */
function whileOverloaded<R>(fn: () => Promise<R>): Promise<R> {
  return retryOnConflict(fn, {
    steps: 5,
    durationMs: 500,
    factor: 2,
    retriable: (err) => isKubeApiError(err) && (err.statusCode === 429 || err.statusCode >= 500),
  });
}
