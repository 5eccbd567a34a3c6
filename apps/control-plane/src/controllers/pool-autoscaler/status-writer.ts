// Writing a SandboxWarmPoolAutoscaler's status: a JSON merge patch of the
// status subresource (conditions are replaced whole, as the controller owns
// them all).
import type { KubeConfig } from '@kubernetes/client-node';
import {
  SandboxWarmPoolAutoscalerType,
  type PoolAutoscalerStatus,
  type SandboxWarmPoolAutoscaler,
} from '@warmpool/api';
import { ignoreNotFound, ResourceClient } from '@warmpool/kube';

export interface AutoscalerStatusWriter {
  write(autoscaler: SandboxWarmPoolAutoscaler, status: PoolAutoscalerStatus, signal?: AbortSignal): Promise<void>;
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
  ): Promise<void> {
    const name = autoscaler.metadata?.name;
    const namespace = autoscaler.metadata?.namespace;
    if (name === undefined || namespace === undefined) return;
    const timeout = AbortSignal.timeout(10_000);
    await ignoreNotFound(
      this.#client.patchStatus({ namespace, name }, status, {
        signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
      }),
    );
  }
}
