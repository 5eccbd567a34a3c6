// Writing a pool's status. Server-side apply on /status as the field manager
// `warmpool-control-plane`: we own exactly the fields we send, conditions
// merge by type, and whatever another controller owns is left alone. Only the
// fields the installed CRD declares are sent (status-schema.ts). The apply
// carries the resourceVersion the status was computed from, so it lands only
// on that pool as it was then: never on a namesake created after a delete, nor
// over a change the status did not see (the next run computes again).
import { SandboxWarmPoolType, type SandboxWarmPool, type SandboxWarmPoolStatus } from '@warmpool/api';
import { pinnedWrite, ResourceClient, versionOf, type PinnedWrite, type KubeConfig } from '@warmpool/kube';
import { fitStatus, type StatusFields } from './status-schema.js';

export const FIELD_MANAGER = 'warmpool-control-plane';

export interface PoolStatusWriter {
  /**
   * Writes `status` (all of it that fit() keeps: fields left out are given up) onto `pool` as it is at its
   * resourceVersion: 'gone' when it no longer exists, 'moved' when it changed since or was replaced by a namesake
   * (nothing is written then).
   */
  write(
    pool: SandboxWarmPool,
    status: SandboxWarmPoolStatus,
    signal?: AbortSignal,
  ): Promise<PinnedWrite<SandboxWarmPool>>;
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
  ): Promise<PinnedWrite<SandboxWarmPool>> {
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    return pinnedWrite(
      this.#pools.applyStatus(
        // The resourceVersion pins the write to the pool it was computed from (409 otherwise): a uid here would not,
        // the status subresource drops an apply's metadata (a pool deleted and re-created under the same name took
        // the old pool's status when the apply carried only its uid).
        {
          metadata: {
            name: pool.metadata?.name ?? '',
            namespace: pool.metadata?.namespace ?? '',
            resourceVersion: versionOf(pool),
          },
          status: this.fit(status),
        },
        {
          fieldManager: FIELD_MANAGER,
          force: true,
          signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
        },
      ),
    );
  }
}
