// Claims for a SandboxEnv, and where they are served.
// - Local while the group has idle sandboxes here or can grow here: the local member with the most idle serves,
//   else one whose group can grow (a cold boot; the autoscaler reacts).
// - Otherwise, and when the local claim found no capacity, the claim spills to a foreign member (env-spill.ts);
//   none anywhere answers 429 NoCapacity.
// - A spilled claim is recorded in this cluster's index with the serving cluster, so get, renew and release work
//   through this cluster's API (renew and release are forwarded to the serving cluster).
// - A claim a peer forwards here is served in the peer's own key space (door 'fed', scoped by the peer's id): it
//   never reaches a claim of another owner, and a peer reads, renews or releases only the claims of its space.
import type { FederationRecord, SandboxEnv } from '@warmpool/api';
import { parsePinnedTarget, schedulable, type CapacityRegistry } from '@warmpool/federation';
import type { Lister } from '@warmpool/kube';
import type { Logger } from '@warmpool/runtime';
import type { FederationMetrics } from '../federation/metrics.js';
import { PeerClaimsClient, peerFailureOf } from '../federation/peer-claims.js';
import type { PeerCredentials } from '../federation/peers.js';
import type { ClaimIndex } from './claim-index.js';
import {
  ClaimFailure,
  ownerMark,
  type ClaimCallOptions,
  type ClaimGrant,
  type ClaimOwner,
  type ClaimScope,
  type ClaimService,
} from './claim-service.js';
import { EnvSpill } from './env-spill.js';

/** A claim of `POST /v1/namespaces/{ns}/claims` with `env`. */
export interface EnvClaimOrder {
  namespace: string;
  env: string;
  /** '' = any group. */
  scalingGroup: string;
  /** Where the claimRef is looked up (the caller's front door), and who claims. */
  scope: ClaimScope;
  owner: ClaimOwner;
  claimRef: string;
  ttlSeconds: number;
  claimRefGenerated: boolean;
}

/** A served Env claim: the grant and who serves it. */
export interface EnvGrant {
  grant: ClaimGrant;
  cluster: string;
  memberPool: string;
}

type LocalRecord = Omit<FederationRecord, 'clusterId'>;

export interface EnvClaimRouterOptions {
  /** The claim pipeline of this cluster. */
  claims: ClaimService;
  /** This cluster's claim index (spilled claims are recorded in it). */
  index: ClaimIndex;
  envs: Lister<SandboxEnv>;
  /** Local and foreign capacity; its localClusterId is this cluster. */
  registry: CapacityRegistry;
  /** This cluster's member records as of the last SandboxEnv run. */
  localRecords: () => readonly LocalRecord[];
  /** The configured peers (multi-cluster mode); nothing is forwarded without them. */
  peers?: Pick<PeerCredentials, 'outbound'>;
  /** Timeout of one forwarded call (default 15 s). */
  forwardTimeoutMs?: number;
  /** Foreign members tried per claim at most (default 3). */
  maxForeignAttempts?: number;
  logger: Logger;
  metrics?: FederationMetrics;
}

export class EnvClaimRouter {
  readonly #options: EnvClaimRouterOptions;
  /** Calls to the serving clusters; undefined without configured peers (nothing is forwarded then). */
  readonly #peers: PeerClaimsClient | undefined;
  readonly #spill: EnvSpill | undefined;

  constructor(options: EnvClaimRouterOptions) {
    this.#options = options;
    const { peers, logger } = options;
    if (peers === undefined) return;
    this.#peers = new PeerClaimsClient({
      peers,
      logger,
      ...(options.forwardTimeoutMs !== undefined ? { timeoutMs: options.forwardTimeoutMs } : {}),
    });
    this.#spill = new EnvSpill({
      registry: options.registry,
      peers: this.#peers,
      index: options.index,
      logger,
      metrics: options.metrics,
      ...(options.maxForeignAttempts !== undefined ? { maxForeignAttempts: options.maxForeignAttempts } : {}),
    });
  }

  get clusterId(): string {
    return this.#options.registry.localClusterId;
  }

  async claim(order: EnvClaimOrder, options: ClaimCallOptions = {}): Promise<EnvGrant> {
    try {
      const served = await this.#claim(order, options);
      this.#options.metrics?.envClaim(served.cluster === this.clusterId ? 'local' : 'spilled');
      return served;
    } catch (err) {
      this.#options.metrics?.envClaim(
        err instanceof ClaimFailure && err.reason === 'NoCapacity' ? 'no_capacity' : 'failed',
      );
      throw err;
    }
  }

  async #claim(order: EnvClaimOrder, options: ClaimCallOptions): Promise<EnvGrant> {
    const { registry } = this.#options;
    this.#env(order.namespace, order.env);
    // The same claimRef again answers the claim it already has, wherever it is served.
    const known = await this.#options.claims.lookup(order.scope, order.claimRef, { indexOnly: true });
    if (known !== undefined) {
      if (known.owner !== ownerMark(order.owner))
        throw new ClaimFailure('ClaimRefInUse', `claimRef ${order.claimRef} is held by another owner`);
      return { grant: known, cluster: known.cluster ?? this.clusterId, memberPool: known.warmPool };
    }

    const group = order.scalingGroup;
    let localFailure: ClaimFailure | undefined;
    if (
      registry.localIdle(order.namespace, order.env, group) > 0 ||
      registry.localCanGrow(order.namespace, order.env, group)
    ) {
      const member = this.#localMember(order.namespace, order.env, group);
      if (member !== undefined) {
        try {
          return { grant: await this.#claimLocal(order, member, options), cluster: this.clusterId, memberPool: member };
        } catch (err) {
          if (!(err instanceof ClaimFailure) || err.reason !== 'NoCapacity') throw err;
          localFailure = err;
        }
      }
    }
    const spilled = await this.#spill?.spill(order, options);
    if (spilled !== undefined) return spilled;
    throw (
      localFailure ??
      new ClaimFailure(
        'NoCapacity',
        `no member of SandboxEnv ${order.namespace}/${order.env}${group === '' ? '' : ` (group ${group})`} has an idle sandbox or room to grow, here or in another cluster`,
        { retryAfterSeconds: 1 },
      )
    );
  }

  /**
   * A claim peer `peer` forwarded, pinned to one of this cluster's member
   * pools. Served only for a member pool of the same-named Env here, and only
   * while that member can serve (idle, or its group can grow); it is never
   * sent on. The order's scope and owner are the peer's (door 'fed').
   */
  async claimPinned(
    peer: string,
    order: EnvClaimOrder,
    target: string,
    options: ClaimCallOptions = {},
  ): Promise<EnvGrant> {
    const pinned = parsePinnedTarget(target);
    if (pinned === undefined)
      throw new ClaimFailure('BadRequest', `target ${JSON.stringify(target)} is not <cluster>::<pool>`);
    if (pinned.clusterId !== this.clusterId)
      throw new ClaimFailure('BadRequest', `target names cluster ${pinned.clusterId}, this is ${this.clusterId}`);
    const env = this.#env(order.namespace, order.env);
    const member = env.spec?.members?.find((m) => m.pool === pinned.memberPool);
    if (member === undefined)
      throw new ClaimFailure(
        'PoolNotFound',
        `${pinned.memberPool} is not a member pool of SandboxEnv ${order.namespace}/${order.env}`,
      );
    const record = this.#options
      .localRecords()
      .find((r) => r.namespace === order.namespace && r.envName === order.env && r.memberPool === pinned.memberPool);
    if (record === undefined || !schedulable(record)) {
      throw new ClaimFailure(
        'NoCapacity',
        `member pool ${order.namespace}/${pinned.memberPool} has no idle sandbox and cannot grow`,
        { retryAfterSeconds: 1 },
      );
    }
    return {
      grant: await this.#claimLocal(
        { ...order, scope: { namespace: order.namespace, door: 'fed', peer }, owner: { door: 'fed', peer } },
        pinned.memberPool,
        options,
      ),
      cluster: this.clusterId,
      memberPool: pinned.memberPool,
    };
  }

  /** Renews a claim, on the cluster that serves it. */
  async renew(scope: ClaimScope, idOrClaimRef: string, ttlSeconds: number): Promise<{ deadline: string }> {
    const { namespace } = scope;
    const grant = await this.#options.claims.lookup(scope, idOrClaimRef);
    if (grant?.cluster === undefined || grant.cluster === this.clusterId)
      return this.#options.claims.renew(scope, idOrClaimRef, ttlSeconds);
    const answer = await this.#servingPeer().call(grant.cluster, 'POST', [namespace, grant.id, 'renew'], {
      body: { ttlSeconds },
    });
    if (answer.status === 404) {
      await this.#options.index.drop(grant).catch(() => undefined);
      throw new ClaimFailure(
        'ClaimNotFound',
        `claim ${namespace}/${idOrClaimRef} is gone from cluster ${grant.cluster}`,
      );
    }
    if (answer.status !== 200) throw peerFailureOf(answer, `cluster ${grant.cluster} did not renew`);
    const deadline = String((answer.body as { deadline?: unknown }).deadline ?? '');
    await this.#options.index.renewed(grant, deadline).catch(() => undefined);
    return { deadline };
  }

  /** Releases a claim, on the cluster that serves it; false when there was none. */
  async release(scope: ClaimScope, idOrClaimRef: string): Promise<boolean> {
    const { namespace } = scope;
    const grant = await this.#options.claims.lookup(scope, idOrClaimRef);
    if (grant?.cluster === undefined || grant.cluster === this.clusterId)
      return this.#options.claims.release(scope, idOrClaimRef);
    const answer = await this.#servingPeer().call(grant.cluster, 'DELETE', [namespace, grant.id]);
    if (answer.status !== 204 && answer.status !== 404)
      throw peerFailureOf(answer, `cluster ${grant.cluster} did not release`);
    await this.#options.index.drop(grant);
    return true;
  }

  #env(namespace: string, name: string): SandboxEnv {
    const env = this.#options.envs.get(namespace, name);
    if (env === undefined || env.metadata?.deletionTimestamp !== undefined)
      throw new ClaimFailure('EnvNotFound', `SandboxEnv ${namespace}/${name} not found`);
    return env;
  }

  /** The local member with the most idle; without idle, the first whose group can grow. */
  #localMember(namespace: string, env: string, group: string): string | undefined {
    let best: LocalRecord | undefined;
    for (const r of this.#options.localRecords()) {
      if (
        r.namespace !== namespace ||
        r.envName !== env ||
        (group !== '' && r.scalingGroup !== group) ||
        !schedulable(r)
      )
        continue;
      if (best === undefined || r.idle > best.idle) best = r;
    }
    return best?.memberPool;
  }

  #claimLocal(order: EnvClaimOrder, memberPool: string, options: ClaimCallOptions): Promise<ClaimGrant> {
    return this.#options.claims.claim(
      {
        namespace: order.namespace,
        warmPool: memberPool,
        claimRef: order.claimRef,
        ttlSeconds: order.ttlSeconds,
        owner: order.owner,
        claimRefGenerated: order.claimRefGenerated,
      },
      options,
    );
  }

  /** The client to a claim's serving cluster; without configured peers, the claim cannot be reached from here. */
  #servingPeer(): PeerClaimsClient {
    if (this.#peers === undefined)
      throw new ClaimFailure('Unavailable', 'the claim is served by another cluster, and no peers are configured', {
        retryAfterSeconds: 1,
      });
    return this.#peers;
  }
}
