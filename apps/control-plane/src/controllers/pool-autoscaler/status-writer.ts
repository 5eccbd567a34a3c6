// Writing a SandboxWarmPoolAutoscaler's status: a PUT of the status
// subresource pinned to the autoscaler it was computed from (its uid and
// resourceVersion, libs/kube statusReplacementOf), so a status computed from
// the cache never lands on a namesake created after a delete. What the step
// computed replaces those fields (conditions whole, as the controller owns
// them all); any other status field is kept as it was at that version.
import {
  SandboxWarmPoolAutoscalerType,
  type PoolAutoscalerStatus,
  type SandboxWarmPoolAutoscaler,
} from '@warmpool/api';
import { pinnedWrite, ResourceClient, statusReplacementOf, type PinnedWrite, type KubeConfig } from '@warmpool/kube';

export interface AutoscalerStatusWriter {
  /**
   * Writes `status` onto `autoscaler` as it is at its resourceVersion: 'gone' when it no longer exists, 'moved' when
   * it changed since or was replaced by a namesake (nothing is written then: the next tick computes from the cache
   * again).
   */
  write(
    autoscaler: SandboxWarmPoolAutoscaler,
    status: PoolAutoscalerStatus,
    signal?: AbortSignal,
  ): Promise<PinnedWrite<SandboxWarmPoolAutoscaler>>;
}

export class KubeAutoscalerStatusWriter implements AutoscalerStatusWriter {
  readonly #client: ResourceClient<SandboxWarmPoolAutoscaler>;

  constructor(kubeConfig: KubeConfig) {
    this.#client = new ResourceClient<SandboxWarmPoolAutoscaler>(kubeConfig, SandboxWarmPoolAutoscalerType);
  }

  async write(
    autoscaler: SandboxWarmPoolAutoscaler,
    status: PoolAutoscalerStatus,
    signal?: AbortSignal,
  ): Promise<PinnedWrite<SandboxWarmPoolAutoscaler>> {
    const timeout = AbortSignal.timeout(10_000);
    return pinnedWrite(
      // The step's status whole (statusOf carries over what outlives a step, lastScaleTime): a number the step no
      // longer has (the hit ratio without claims, the rate after the target went) is gone, not left stale.
      this.#client.replaceStatus(statusReplacementOf(autoscaler, status), {
        signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
      }),
    );
  }
}
