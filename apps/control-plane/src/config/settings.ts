// The control plane's settings: the one typed shape that flags validate into
// (config/validate.ts) and that createControlPlane reads. Every field left out
// takes the default of the subsystem it configures.
import { hostname } from 'node:os';
import type { HostPort } from '@warmpool/runtime';
import type { SandboxClaimSettings } from '../controllers/sandboxclaims/controller.js';
import type { ClaimJanitorSettings } from '../controllers/sandboxclaims/janitor.js';
import type { WarmPoolDriverSettings } from '../controllers/warmpool/options.js';
import type { FederationSettings } from '../federation/setup.js';
import type { ProvisioningSettings } from '../provisioning/options.js';
import type { RedisSettings } from '../redis/connection.js';
import type { PoolAutoscalerSettings } from '../controllers/pool-autoscaler/controller.js';

export type { FederationSettings } from '../federation/setup.js';

export const DEFAULT_LEASE_NAME = 'warmpool-control-plane';

/** This replica's identity in the Lease when none is given: hostname-pid. */
export function defaultIdentity(): string {
  return `${hostname()}-${process.pid}`;
}

export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

export interface ControlPlaneSettings {
  /** Where the election Lease (which carries the generation epoch) lives (default `default`). */
  namespace?: string;
  /** This replica's identity in the Lease (default hostname-pid). */
  identity?: string;
  /**
   * The election Lease, which also carries the generation epoch (default `warmpool-control-plane`);
   * `<leaseName>-generation` is only read, for upgrades.
   */
  leaseName?: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** false: drive at once without a Lease (a single replica by construction, e.g. a benchmark). Default true. */
  leaderElection?: boolean;
  driver?: Partial<WarmPoolDriverSettings>;
  /** How the driver calls the node agents (SetPools pushes and probes); see agents/client.ts. */
  setPools?: SetPoolsSettings;
  /** Serve /healthz, /readyz and /metrics here; nothing is served when omitted. */
  listen?: HostPort;
  /** Also serve /healthz and /readyz (only) here: the probe port. */
  probeListen?: HostPort;
  /** /healthz fails when, while leading, no reconcile finished for this long (default 2 min). */
  stallTimeoutMs?: number;
  /**
   * The node agents' pods (label selector, in `namespace`): an agent advertising its pod IP is
   * called there only while a pod of these runs on its node with that IP. Without it, only the
   * Node's own status.addresses vouch for an agent's address.
   */
  agentPodSelector?: string;
  /** Provisioning (claims): off when omitted. Every replica runs it; the leader also serves SandboxClaims. */
  claims?: ClaimsSettings;
  sandboxClaims?: { controller?: Partial<SandboxClaimSettings>; janitor?: Partial<ClaimJanitorSettings> };
  /** SandboxEnv status and federation; see FederationSettings. */
  federation?: FederationSettings;
  /** The Env autoscaler (leader-only): no scale-down until this long after a scale-up (default 60 s). */
  envScaleDownDelayMs?: number;
  /** The SandboxWarmPoolAutoscaler controller (leader-only, with claims): its step period and initial lead time. */
  poolAutoscaler?: Partial<PoolAutoscalerSettings>;
  /** Serve the Sandbox API (agents.x-k8s.io/v1beta1 sandboxes, behind an APIService) here; off when omitted. */
  sandboxApi?: SandboxApiSettings;
}

export interface SetPoolsSettings {
  /** Timeout of each probe attempt (default 2 s). */
  timeoutMs?: number;
  /** Each SetPools push attempt (default 60 s: a real sandboxd answers once trimmed VMs are gone). */
  pushTimeoutMs?: number;
  /** Attempts per SetPools call (default 3). */
  attempts?: number;
}

export interface ClaimsSettings {
  /** The claim pipeline's Redis (also the Sandbox API's claim feed). */
  redis: RedisSettings;
  /** Serve the HTTP claim API here; not served when omitted (the pipeline still runs, e.g. for SandboxClaims). */
  listen?: HostPort;
  /** PEM files, read at start; absent: plain HTTP. */
  tls?: TlsFiles;
  settings?: Partial<ProvisioningSettings>;
  /** Key prefix in Redis (default `warmpool`). */
  prefix?: string;
}

export interface SandboxApiSettings {
  listen: HostPort;
  /** PEM files; absent: a self-signed certificate made at start. */
  tls?: TlsFiles;
  /** Extra DNS names for the self-signed certificate. */
  selfSignedNames?: string[];
}
