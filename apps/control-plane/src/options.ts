// What createControlPlane takes and gives: the settings (config/settings.ts)
// plus what a process, a spec or a benchmark injects (Kubernetes access, the
// fleet token, logger, clock, metrics registry, and fakes at the process edge).
import type { KubeConfig } from '@warmpool/kube';
import type { Clock, Logger } from '@warmpool/runtime';
import type { Registry } from 'prom-client';
import type { PoolSetter } from './agents/pool-setter.js';
import type { ControlPlaneSettings } from './config/settings.js';
import type { ScaleTarget } from './controllers/sandboxenvs/autoscaler.js';
import type { EnvStatusWriter } from './controllers/sandboxenvs/status-writer.js';
import type { EventRecorder } from './controllers/warmpool/events.js';
import type { PoolStatusWriter } from './controllers/warmpool/status-writer.js';
import type { EpochStore } from './generation/generation.js';
import type { TokenSource } from './agents/token.js';

export interface ControlPlaneOptions extends ControlPlaneSettings {
  kubeConfig: KubeConfig;
  /** The fleet token, or where to read it at each call. None (or empty): fail-closed, see the README. */
  token: TokenSource | string | undefined;
  /** For warmpool_build_info. */
  version?: string;
  logger?: Logger;
  clock?: Clock;
  /** Metrics go here (default: a registry of the control plane's own). */
  registry?: Registry;
  /** Default: HTTP to each agent's spec.address. */
  poolSetter?: PoolSetter;
  /** Default: status server-side applied to the apiserver. */
  statusWriter?: PoolStatusWriter;
  /** Default: core/v1 Events. */
  events?: EventRecorder;
  /** Default: an annotation on the election Lease, written only while holding it. */
  epochStore?: EpochStore;
  /** Default: a merge patch of the SandboxEnv status subresource. */
  envStatusWriter?: EnvStatusWriter;
  /** Default: the SandboxWarmPool scale subresource. */
  scaleTarget?: ScaleTarget;
}

export interface ControlPlane {
  readonly identity: string;
  readonly registry: Registry;
  /** The bound URL of the health server, once started with `listen`. */
  readonly url: string | undefined;
  /** The bound URL of the probe-only server, once started with `probeListen`. */
  readonly probeUrl: string | undefined;
  /** Why /healthz fails (empty when live): a wedged reconcile loop while leading. */
  notLiveReasons(): string[];
  /** The bound URL of the claim API, once started with `claims.listen`. */
  readonly claimsUrl: string | undefined;
  /** The bound URL of the Sandbox API, once started with `sandboxApi.listen`. */
  readonly sandboxApiUrl: string | undefined;
  /** Why this replica is not ready (empty when it is): no token, caches not synced. */
  notReadyReasons(): string[];
  ready(): boolean;
  /** True while this replica holds the lease and drives. */
  isLeader(): boolean;
  start(): Promise<void>;
  /** Stops pushing at once, releases the lease (a standby takes over without waiting for expiry), closes everything. */
  close(): Promise<void>;
}
