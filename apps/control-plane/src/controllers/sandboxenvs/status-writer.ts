// Writing a SandboxEnv's status: a PUT of the status subresource pinned to the
// Env it was computed from (its uid and resourceVersion, libs/kube
// statusReplacementOf), so a status computed from the cache never lands on a
// namesake created after a delete. The rows and the foreign view replace what
// was there (a row or cluster that went away goes from status too); any other
// status field the Env shows is kept as it was at that version.
import { SandboxEnvType, type SandboxEnv, type SandboxEnvStatus } from '@warmpool/api';
import { pinnedWrite, ResourceClient, statusReplacementOf, type PinnedWrite, type KubeConfig } from '@warmpool/kube';

export interface EnvStatusWriter {
  /**
   * Writes `status` onto `env` as it is at its resourceVersion: 'gone' when it no longer exists, 'moved' when it
   * changed since or was replaced by a namesake (nothing is written then: the next run computes from the cache again).
   */
  write(env: SandboxEnv, status: SandboxEnvStatus, signal?: AbortSignal): Promise<PinnedWrite<SandboxEnv>>;
}

export class KubeEnvStatusWriter implements EnvStatusWriter {
  readonly #envs: ResourceClient<SandboxEnv>;
  readonly #timeoutMs: number;

  constructor(kubeConfig: KubeConfig, options: { timeoutMs?: number } = {}) {
    this.#envs = new ResourceClient<SandboxEnv>(kubeConfig, SandboxEnvType);
    this.#timeoutMs = options.timeoutMs ?? 10_000;
  }

  async write(env: SandboxEnv, status: SandboxEnvStatus, signal?: AbortSignal): Promise<PinnedWrite<SandboxEnv>> {
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    return pinnedWrite(
      this.#envs.replaceStatus(statusReplacementOf(env, { ...env.status, ...status }), {
        signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
      }),
    );
  }
}
