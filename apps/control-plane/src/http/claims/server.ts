// The claim API as a replica serves it: the claim routes over this cluster's
// pipeline, callers reviewed by the apiserver (TokenReview and
// SubjectAccessReview) unless given another reviewer, and claims for a
// SandboxEnv routed to a member pool here or, with federation, in another
// cluster.
import type { SandboxEnv } from '@warmpool/api';
import { transportFor, type Lister, type KubeConfig } from '@warmpool/kube';
import { readFile } from 'node:fs/promises';
import { serveApp, type HostPort, type HttpServer, type Logger } from '@warmpool/runtime';
import type { TlsFiles } from '../../config/settings.js';
import type { Runnable } from '../../manager/runnable.js';
import type { Federation } from '../../federation/federation.js';
import { EnvClaimRouter, type EnvClaimRouterOptions } from '../../provisioning/env-claim-router.js';
import type { PeerCredentials } from '../../federation/peers.js';
import type { ProvisioningPipeline } from '../../provisioning/pipeline.js';
import { KubeAccessReviewer, type AccessReviewer } from '@warmpool/kube';
import { createClaimApi, type ClaimApi } from './app.js';

export interface ReplicaClaimApiOptions {
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

export function createReplicaClaimApi(options: ReplicaClaimApiOptions): ClaimApi {
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

/** The claim API served at `listen` (over TLS with `tls`'s PEM files, read at start); nothing when not given. */
export class ClaimApiServer implements Runnable {
  readonly name = 'claim API';
  readonly needsLeader = false;
  readonly #api: ClaimApi;
  readonly #listen: HostPort | undefined;
  readonly #tls: TlsFiles | undefined;
  #server: HttpServer | undefined;

  constructor(api: ClaimApi, listen: HostPort | undefined, tls: TlsFiles | undefined) {
    this.#api = api;
    this.#listen = listen;
    this.#tls = tls;
  }

  get url(): string | undefined {
    return this.#server?.url;
  }

  async start(): Promise<void> {
    if (this.#listen === undefined) return;
    const tls =
      this.#tls !== undefined
        ? { cert: await readFile(this.#tls.certFile), key: await readFile(this.#tls.keyFile) }
        : undefined;
    const { app, ahead } = this.#api;
    this.#server = await serveApp(app, { ...this.#listen, ahead, ...(tls !== undefined ? { tls } : {}) });
  }

  async close(): Promise<void> {
    await this.#server?.close();
  }
}
