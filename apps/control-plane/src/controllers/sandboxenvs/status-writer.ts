// Writing a SandboxEnv's status: a JSON merge patch of the status
// subresource with the rows and the foreign view (a merge patch replaces
// arrays whole, so a row or cluster that went away goes from status too).
import type { KubeConfig } from '@kubernetes/client-node';
import { SandboxEnvType, type SandboxEnv, type SandboxEnvStatus } from '@warmpool/api';
import { ignoreNotFound, ResourceClient } from '@warmpool/kube';

export interface EnvStatusWriter {
  /** Writes `status`; undefined when the Env no longer exists. */
  write(env: SandboxEnv, status: SandboxEnvStatus, signal?: AbortSignal): Promise<SandboxEnv | undefined>;
}

export class KubeEnvStatusWriter implements EnvStatusWriter {
  readonly #envs: ResourceClient<SandboxEnv>;
  readonly #timeoutMs: number;

  constructor(kubeConfig: KubeConfig, options: { timeoutMs?: number } = {}) {
    this.#envs = new ResourceClient<SandboxEnv>(kubeConfig, SandboxEnvType);
    this.#timeoutMs = options.timeoutMs ?? 10_000;
  }

  async write(env: SandboxEnv, status: SandboxEnvStatus, signal?: AbortSignal): Promise<SandboxEnv | undefined> {
    const name = env.metadata?.name;
    const namespace = env.metadata?.namespace;
    if (name === undefined || namespace === undefined) return undefined;
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    return ignoreNotFound(
      this.#envs.patchStatus({ namespace, name }, status, {
        signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
      }),
    );
  }
}
