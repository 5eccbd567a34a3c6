// The claim API as a replica serves it: the claim routes over this cluster's
// pipeline, callers reviewed by the apiserver (TokenReview and
// SubjectAccessReview) unless given another reviewer, and claims for a
// SandboxEnv routed to a member pool here or, with federation, in another
// cluster.
import type { KubeConfig } from '@kubernetes/client-node';
import type { SandboxEnv } from '@warmpool/api';
import { transportFor, type Lister } from '@warmpool/kube';
import type { Logger } from '@warmpool/runtime';
import type { Federation } from '../../federation/federation.js';
import { EnvClaimRouter, type EnvClaimRouterOptions } from '../../federation/router.js';
import type { PeerCredentials } from '../../federation/peers.js';
import type { ProvisioningPipeline } from '../../provisioning/pipeline.js';
import { KubeAccessReviewer, type AccessReviewer } from '@warmpool/kube';
import { createClaimApi } from './app.js';

export interface ServedClaimApiOptions {
  kubeConfig: KubeConfig;
  claims: ProvisioningPipeline;
  envs: Lister<SandboxEnv>;
  /** This cluster's Env member records as of the last SandboxEnv run. */
  localRecords: EnvClaimRouterOptions['localRecords'];
  federation: Pick<Federation, 'registry' | 'metrics'>;
  multiCluster: boolean;
  /** The peer clusters (multi-cluster mode only): who may forward claims here, where claims are forwarded to. */
  peers?: PeerCredentials | undefined;
  /** Default: TokenReview + SubjectAccessReview on the apiserver. */
  reviewer?: AccessReviewer | undefined;
  /** Whether a SandboxClaim of that name exists (its name is refused as a claimRef). */
  sandboxClaimNamed?: (namespace: string, name: string) => boolean;
  logger: Logger;
}

export function createServedClaimApi(options: ServedClaimApiOptions): ReturnType<typeof createClaimApi> {
  const { claims, federation, logger } = options;
  const peers = options.multiCluster ? options.peers : undefined;
  const envRouter = new EnvClaimRouter({
    claims,
    index: claims.index,
    envs: options.envs,
    registry: federation.registry,
    localRecords: options.localRecords,
    ...(peers !== undefined ? { peers } : {}),
    logger: logger.child({ subsystem: 'env-claims' }),
    metrics: federation.metrics,
  });
  return createClaimApi({
    claims,
    reviewer: options.reviewer ?? new KubeAccessReviewer({ transport: transportFor(options.kubeConfig) }),
    logger: logger.child({ subsystem: 'claim-api' }),
    envs: envRouter,
    ...(options.sandboxClaimNamed !== undefined ? { sandboxClaimNamed: options.sandboxClaimNamed } : {}),
    ...(peers !== undefined ? { peers } : {}),
  });
}
