// Federation as the control plane sets it up: multi-cluster mode only with
// both a cluster id and a hub (one without the other: a single cluster, whose
// Registry still holds this cluster's records for the Env claim router).
// Which clusters claims are forwarded to and accepted from is the peers'
// business (peers.ts), never the hub's.
import type { KubeObject } from '@warmpool/api';
import type { Informer } from '@warmpool/kube';
import type { Logger } from '@warmpool/runtime';
import type { Registry as PromRegistry } from 'prom-client';
import { Federation, FEDERATION_DEFAULTS, type HubSettings } from './federation.js';
import { cachesSynced, type Runnable } from '../manager/runnable.js';
import type { PeerCredentials } from './peers.js';

export interface FederationSettings {
  /** This cluster's id; without it (or without `hub`) the cluster is alone and nothing is started. */
  clusterId?: string;
  /** The shared hub: multi-cluster mode when given together with clusterId. */
  hub?: HubSettings;
  /** Report / full-read interval (default 2 s); records live 3 × this unless ttlMs says otherwise. */
  intervalMs?: number;
  ttlMs?: number;
  /** The peer clusters, each with its own credentials; without them no claim spills and none is accepted. */
  peers?: PeerCredentials;
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
  },
): FederationSetup {
  const multiCluster = settings.clusterId !== undefined && settings.hub !== undefined;
  const federation = new Federation({
    clusterId: settings.clusterId ?? FEDERATION_DEFAULTS.singleClusterId,
    ...(settings.intervalMs !== undefined ? { intervalMs: settings.intervalMs } : {}),
    ...(settings.ttlMs !== undefined ? { ttlMs: settings.ttlMs } : {}),
    ...(multiCluster && settings.hub !== undefined ? { hub: settings.hub } : {}),
    promRegistry: deps.promRegistry,
    logger: deps.logger,
  });
  return { federation, multiCluster };
}

/**
 * Federation as the manager runs it: the hub connection and the watcher in every replica (multi-cluster mode only),
 * the reporter on the leader once `caches` have synced (it reports what the SandboxEnv runs computed from them).
 */
export function federationRunnables(
  { federation, multiCluster }: FederationSetup,
  caches: ReadonlyArray<Informer<KubeObject>>,
  logger: Logger,
): Runnable[] {
  return [
    {
      name: 'federation watcher',
      needsLeader: false,
      async start() {
        if (multiCluster) await federation.start();
        else
          logger.info(
            'single cluster: federation is off (it needs both --cluster-id and --federation-redis-url); nothing is reported or watched',
          );
      },
      close: () => federation.close(),
    },
    {
      name: 'federation reporter',
      needsLeader: true,
      async start(signal) {
        if (await cachesSynced(caches, signal)) federation.lead(signal);
      },
      close: () => federation.stopLeading(),
    },
  ];
}
