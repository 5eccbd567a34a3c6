// Every claimed sandbox's simulated runtime state: its workspace, made on
// first use and dropped when the claim ends (release or reap), so a released
// id has nothing left to read.
import type { FakeSandboxd } from '../fake-sandboxd.js';
import { Workspace } from './workspace.js';

export interface RuntimeSettings {
  /** A command still running after this long is stopped (upstream's SANDBOX_EXEC_TIMEOUT_SECONDS, 300 s). */
  execTimeoutMs: number;
  /** Bytes of files one sandbox may hold. */
  workspaceMaxBytes: number;
}

export const RUNTIME_DEFAULTS: RuntimeSettings = {
  execTimeoutMs: 300_000,
  workspaceMaxBytes: 1024 * 1024 * 1024,
};

export class SandboxRuntimes {
  readonly settings: RuntimeSettings;
  readonly #workspaces = new Map<string, Workspace>();
  readonly #unsubscribe: () => void;
  /** Requests served per operation, for tests that must prove nothing reached the sandbox. */
  readonly served = new Map<string, number>();

  constructor(core: FakeSandboxd, settings: Partial<RuntimeSettings> = {}) {
    this.settings = { ...RUNTIME_DEFAULTS, ...settings };
    this.#unsubscribe = core.onClaimGone((id) => this.#workspaces.delete(id));
  }

  /** The sandbox's workspace (the caller has checked that the claim is live). */
  workspaceOf(id: string): Workspace {
    let workspace = this.#workspaces.get(id);
    if (workspace === undefined) {
      workspace = new Workspace({ maxBytes: this.settings.workspaceMaxBytes, now: Date.now });
      this.#workspaces.set(id, workspace);
    }
    return workspace;
  }

  count(operation: string): void {
    this.served.set(operation, (this.served.get(operation) ?? 0) + 1);
  }

  close(): void {
    this.#unsubscribe();
    this.#workspaces.clear();
  }
}
