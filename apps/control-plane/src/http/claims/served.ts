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
import type { ProvisioningPipeline } from '../../provisioning/pipeline.js';
import type { TokenSource } from '../../token.js';
import { KubeAccessReviewer, type AccessReviewer } from './access-review.js';
import { createClaimApi } from './app.js';

export interface ServedClaimApiOptions {
  kubeConfig: KubeConfig;
  claims: ProvisioningPipeline;
  envs: Lister<SandboxEnv>;
  /** This cluster's Env member records as of the last SandboxEnv run. */
  localRecords: EnvClaimRouterOptions['localRecords'];
  federation: Pick<Federation, 'registry' | 'metrics' | 'claimsUrlOf'>;
  multiCluster: boolean;
  /** The token peer clusters share to forward claims. */
  federationToken?: TokenSource | undefined;
  /** Default: TokenReview + SubjectAccessReview on the apiserver. */
  reviewer?: AccessReviewer | undefined;
  /** Whether a SandboxClaim of that name exists (its name is refused as a claimRef). */
  sandboxClaimNamed?: (namespace: string, name: string) => boolean;
  logger: Logger;
}

export function createServedClaimApi(options: ServedClaimApiOptions): ReturnType<typeof createClaimApi> {
  const { claims, federation, multiCluster, federationToken, logger } = options;
  const envRouter = new EnvClaimRouter({
    claims,
    index: claims.index,
    envs: options.envs,
    registry: federation.registry,
    localRecords: options.localRecords,
    ...(multiCluster ? { claimsUrlOf: (cluster: string) => federation.claimsUrlOf(cluster) } : {}),
    ...(federationToken !== undefined ? { federationToken } : {}),
    logger: logger.child({ subsystem: 'env-claims' }),
    metrics: federation.metrics,
  });
  return createClaimApi({
    claims,
    reviewer: options.reviewer ?? new KubeAccessReviewer({ transport: transportFor(options.kubeConfig) }),
    logger: logger.child({ subsystem: 'claim-api' }),
    envs: envRouter,
    ...(options.sandboxClaimNamed !== undefined ? { sandboxClaimNamed: options.sandboxClaimNamed } : {}),
    ...(multiCluster && federationToken !== undefined ? { federationToken } : {}),
  });
}
