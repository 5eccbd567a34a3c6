// Writing a pool's status. Server-side apply on /status as the field manager
// `warmpool-control-plane`: we own exactly the fields we send, conditions
// merge by type, and whatever another controller owns is left alone. Only the
// fields the installed CRD declares are sent (status-schema.ts).
import type { KubeConfig } from '@kubernetes/client-node';
import { SandboxWarmPoolType, type SandboxWarmPool, type SandboxWarmPoolStatus } from '@warmpool/api';
import { ignoreNotFound, ResourceClient, retryOnConflict } from '@warmpool/kube';
import { fitStatus, type StatusFields } from './status-schema.js';

export const FIELD_MANAGER = 'warmpool-control-plane';

export interface PoolStatusWriter {
  /**
   * Writes `status` (all of it that fit() keeps: fields left out are given up); undefined when the pool no longer
   * exists.
   */
  write(
    pool: SandboxWarmPool,
    status: SandboxWarmPoolStatus,
    signal?: AbortSignal,
  ): Promise<SandboxWarmPool | undefined>;
  /** What of `status` the pools' schema can hold now (default: all of it). */
  fit?(status: SandboxWarmPoolStatus): SandboxWarmPoolStatus;
}

export class KubePoolStatusWriter implements PoolStatusWriter {
  readonly #pools: ResourceClient<SandboxWarmPool>;
  readonly #timeoutMs: number;
  readonly #fields: () => StatusFields;

  /** `fields`: the status fields the installed CRD declares (default: any). */
  constructor(kubeConfig: KubeConfig, options: { timeoutMs?: number; fields?: () => StatusFields } = {}) {
    this.#pools = new ResourceClient<SandboxWarmPool>(kubeConfig, SandboxWarmPoolType);
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#fields = options.fields ?? (() => 'any');
  }

  fit(status: SandboxWarmPoolStatus): SandboxWarmPoolStatus {
    return fitStatus(status, this.#fields());
  }

  async write(
    pool: SandboxWarmPool,
    status: SandboxWarmPoolStatus,
    signal?: AbortSignal,
  ): Promise<SandboxWarmPool | undefined> {
    const name = pool.metadata?.name;
    const namespace = pool.metadata?.namespace;
    if (name === undefined || namespace === undefined) return undefined;
    const fitted = this.fit(status);
    // Forced apply does not conflict; the retry covers an apiserver that answers 409 anyway (say, a uid precondition
    // race). A pool deleted meanwhile has no status to write: undefined.
    return ignoreNotFound(
      retryOnConflict(
        () => {
          const timeout = AbortSignal.timeout(this.#timeoutMs);
          return this.#pools.applyStatus(
            // The uid pins the write to this incarnation: a pool deleted and re-created under the same name is not ours
            // to write blindly.
            {
              metadata: { name, namespace, ...(pool.metadata?.uid ? { uid: pool.metadata.uid } : {}) },
              status: fitted,
            },
            {
              fieldManager: FIELD_MANAGER,
              force: true,
              signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
            },
          );
        },
        { steps: 3, ...(signal ? { signal } : {}) },
      ),
    );
  }
}
