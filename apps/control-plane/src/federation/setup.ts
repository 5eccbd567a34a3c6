// Federation as the control plane sets it up: multi-cluster mode only with
// both a cluster id and a hub (one without the other: a single cluster, whose
// Registry still holds this cluster's records for the Env claim router), and
// the claim API URL advertised to the other clusters.
import type { Logger } from '@warmpool/runtime';
import type { Registry as PromRegistry } from 'prom-client';
import type { TokenSource } from '../token.js';
import { Federation, FEDERATION_DEFAULTS, type HubSettings } from './federation.js';

export interface FederationSettings {
  /** This cluster's id; without it (or without `hub`) the cluster is alone and nothing is started. */
  clusterId?: string;
  /** The shared hub: multi-cluster mode when given together with clusterId. */
  hub?: HubSettings;
  /** Report / full-read interval (default 2 s); records live 3 × this unless ttlMs says otherwise. */
  intervalMs?: number;
  ttlMs?: number;
  /** The token peer clusters share to forward claims to each other. */
  token?: TokenSource;
}

export interface FederationSetup {
  readonly federation: Federation;
  /** Both a cluster id and a hub were given. */
  readonly multiCluster: boolean;
}

export function createFederation(
  settings: FederationSettings,
  deps: {
    promRegistry: PromRegistry;
    logger: Logger;
    /** The claim API's bound URL, once it listens. */
    claimsUrl: () => string | undefined;
  },
): FederationSetup {
  const multiCluster = settings.clusterId !== undefined && settings.hub !== undefined;
  const federation = new Federation({
    clusterId: settings.clusterId ?? FEDERATION_DEFAULTS.singleClusterId,
    ...(settings.intervalMs !== undefined ? { intervalMs: settings.intervalMs } : {}),
    ...(settings.ttlMs !== undefined ? { ttlMs: settings.ttlMs } : {}),
    ...(multiCluster && settings.hub !== undefined
      ? {
          hub: {
            ...settings.hub,
            claimsAdvertiseUrl: () => advertisedClaimsUrl(settings.hub?.claimsAdvertiseUrl, deps.claimsUrl()),
          },
        }
      : {}),
    promRegistry: deps.promRegistry,
    logger: deps.logger,
  });
  return { federation, multiCluster };
}

/**
 * Where peers reach this cluster's claim API: the URL given, else the claim
 * API's own URL when it listens on one address (a wildcard one is not an
 * address a peer can use).
 */
function advertisedClaimsUrl(
  given: string | (() => string | undefined) | undefined,
  bound: string | undefined,
): string | undefined {
  const url = typeof given === 'function' ? given() : given;
  if (url !== undefined) return url;
  if (bound === undefined) return undefined;
  const host = new URL(bound).hostname;
  return host === '0.0.0.0' || host === '[::]' ? undefined : bound;
}
