// Claims for a SandboxEnv, and where they are served.
//
// - Stay local while the group has local idle sandboxes (localIdle) or can
//   grow locally (localCanGrow): the local member with the most idle serves,
//   else one whose group can grow (a cold boot; the autoscaler reacts).
// - Otherwise, and when the local claim found no capacity, the best foreign
//   member (bestForeignMember's ranking) gets the claim: it is forwarded to
//   that cluster's claim API pinned to `<cluster>::<pool>`. Only configured
//   peers are candidates (the peers file: their claim API origin and the token
//   presented to each); a record on the hub from any other cluster id is
//   never forwarded to. A pinned pool that can no longer serve sends the claim
//   on to the next-best member, at most `maxForeignAttempts` of them; none
//   anywhere answers 429 NoCapacity. Nothing waits open-endedly: each forward
//   has a timeout.
// - A spilled claim is recorded in this cluster's claim index with the
//   serving cluster, so get, renew and release work through this cluster's
//   API (renew and release are forwarded to the serving cluster).
// - A claim a peer forwards here is served in the peer's own key space (door
//   'fed', scoped by the peer's id): it never reaches a claim of another owner,
//   and a peer reads, renews or releases only the claims of its space.
import {
  CLAIMREF_GENERATED_HEADER,
  claimBodySchema,
  claimErrorBodySchema,
  type ClaimBody,
  type FederationRecord,
  type SandboxEnv,
} from '@warmpool/api';
import {
  compareForeignCandidates,
  formatPinnedTarget,
  parsePinnedTarget,
  schedulable,
  type CapacityRegistry,
} from '@warmpool/federation';
import type { Lister } from '@warmpool/kube';
import { messageOf } from '@warmpool/runtime';
import type { Logger } from '@warmpool/runtime';
import type { ClaimIndex } from '../provisioning/claim-index.js';
import {
  ClaimFailure,
  ownerMark,
  type ClaimCallOptions,
  type ClaimGrant,
  type ClaimOwner,
  type ClaimScope,
  type ClaimService,
} from '../provisioning/claim-service.js';
import type { FederationMetrics } from './metrics.js';
import type { OutboundPeer, PeerCredentials } from './peers.js';

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
  /** Cluster ids on the hub that are no configured peer, each logged once. */
  readonly #strangers = new Set<string>();

  constructor(options: EnvClaimRouterOptions) {
    this.#options = options;
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
    const spilled = await this.#spill(order, options);
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
    const answer = await this.#forward(grant.cluster, 'POST', [namespace, grant.id, 'renew'], { ttlSeconds });
    if (answer.status === 404) {
      await this.#options.index.drop(grant).catch(() => undefined);
      throw new ClaimFailure(
        'ClaimNotFound',
        `claim ${namespace}/${idOrClaimRef} is gone from cluster ${grant.cluster}`,
      );
    }
    if (answer.status !== 200) throw failureOf(answer, `cluster ${grant.cluster} did not renew`);
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
    const answer = await this.#forward(grant.cluster, 'DELETE', [namespace, grant.id]);
    if (answer.status !== 204 && answer.status !== 404)
      throw failureOf(answer, `cluster ${grant.cluster} did not release`);
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

  async #spill(order: EnvClaimOrder, options: ClaimCallOptions): Promise<EnvGrant | undefined> {
    const { registry, logger } = this.#options;
    if (this.#options.peers === undefined) return undefined;
    const group = order.scalingGroup;
    const candidates = registry
      .foreignMembers(order.namespace, order.env)
      .filter((m) => (group === '' || m.scalingGroup === group) && schedulable(m) && this.#isPeer(m.clusterId))
      .sort(compareForeignCandidates)
      .slice(0, this.#options.maxForeignAttempts ?? 3);
    for (const candidate of candidates) {
      if (options.signal?.aborted === true) throw new ClaimFailure('Timeout', 'the caller gave up');
      const target = formatPinnedTarget(candidate);
      let answer: Answer;
      try {
        answer = await this.#forward(
          candidate.clusterId,
          'POST',
          [order.namespace],
          {
            env: order.env,
            ...(group !== '' ? { scalingGroup: group } : {}),
            target,
            ttlSeconds: order.ttlSeconds,
            claimRef: order.claimRef,
          },
          options.signal,
          order.claimRefGenerated,
        );
      } catch (err) {
        this.#options.metrics?.forward('unreachable');
        logger.info('a foreign member could not be asked: trying the next', { target, err: messageOf(err) });
        continue;
      }
      if (answer.status !== 200) {
        this.#options.metrics?.forward('refused');
        logger.info('a foreign member did not serve the claim: trying the next', {
          target,
          status: answer.status,
          body: answer.body,
        });
        continue;
      }
      const body = claimBodySchema.safeParse(answer.body);
      if (!body.success) {
        this.#options.metrics?.forward('refused');
        logger.warn('a foreign member answered an unreadable claim: trying the next', { target });
        continue;
      }
      this.#options.metrics?.forward('served');
      const grant = grantOf(body.data, candidate.clusterId, order);
      try {
        const recorded = await this.#options.index.record(grant, '');
        if (!recorded.ok) {
          // Another request took this claimRef meanwhile: the peer's sandbox is the extra one.
          await this.#forward(candidate.clusterId, 'DELETE', [order.namespace, grant.id]).catch(() => undefined);
          throw new ClaimFailure(
            'ClaimRefInUse',
            `claimRef ${order.claimRef} was claimed by another request meanwhile`,
          );
        }
      } catch (err) {
        if (err instanceof ClaimFailure) throw err;
        logger.warn('served by another cluster but not recorded here: release and renew must go to that cluster', {
          target,
          id: grant.id,
          err,
        });
      }
      return { grant, cluster: candidate.clusterId, memberPool: candidate.memberPool };
    }
    return undefined;
  }

  /** Whether records of `clusterId` may be forwarded to: a configured peer. Anything else is logged once. */
  #isPeer(clusterId: string): boolean {
    if (this.#options.peers?.outbound(clusterId) !== undefined) return true;
    if (!this.#strangers.has(clusterId)) {
      this.#strangers.add(clusterId);
      this.#options.logger.warn(
        'the hub holds records of a cluster that is no configured peer: never forwarding to it',
        {
          clusterId,
        },
      );
    }
    return false;
  }

  /**
   * Calls a peer's claim API: `/v1/namespaces/<ns>/claims[/<id>[/renew]]` (each segment URI-encoded) on the
   * origin configured for that peer, with the token configured for it. A 401 is tried once more with the token
   * it replaced (a rotation the peer has not read yet). Redirects are refused: the path is this cluster's own.
   */
  async #forward(
    clusterId: string,
    method: string,
    [namespace, ...claim]: readonly [namespace: string, ...claim: string[]],
    body?: unknown,
    signal?: AbortSignal,
    generatedRef = false,
  ): Promise<Answer> {
    const peer = this.#options.peers?.outbound(clusterId);
    if (peer === undefined)
      throw new ClaimFailure('Unavailable', `cluster ${clusterId} is no configured peer (--federation-peers-file)`, {
        retryAfterSeconds: 1,
      });
    const url = claimsUrl(peer, namespace, claim);
    const call = async (token: string): Promise<Answer> => {
      const timeout = AbortSignal.timeout(this.#options.forwardTimeoutMs ?? 15_000);
      const res = await fetch(url, {
        method,
        redirect: 'error',
        headers: {
          authorization: `Bearer ${token}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          // The serving cluster then releases a sandbox it serves after this call gave up (nobody could come back for
          // it).
          ...(generatedRef ? { [CLAIMREF_GENERATED_HEADER]: '1' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
      });
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = text === '' ? undefined : JSON.parse(text);
      } catch {
        parsed = text;
      }
      return { status: res.status, body: parsed };
    };
    const token = peer.tokens.preferred;
    if (token === undefined)
      throw new ClaimFailure('Unavailable', `no token to present to peer ${clusterId} (its token file is empty)`, {
        retryAfterSeconds: 1,
      });
    let used = token;
    let answer = await call(used);
    const alternate = answer.status === 401 ? peer.tokens.alternateTo(used) : undefined;
    if (alternate !== undefined) {
      used = alternate;
      answer = await call(used);
    }
    if (answer.status !== 401) peer.tokens.worked(used);
    return answer;
  }
}

/** A peer's claim API URL, built on its configured origin: never a string from the hub or the peer's answers. */
function claimsUrl(peer: OutboundPeer, namespace: string, claim: readonly string[]): URL {
  const segments = ['v1', 'namespaces', namespace, 'claims', ...claim].map(encodeURIComponent);
  return new URL(`/${segments.join('/')}`, peer.origin);
}

interface Answer {
  status: number;
  body: unknown;
}

/**
 * A claim served by another cluster, as this cluster's index records it: in
 * the caller's scope and owner, so its get, renew and release go through the
 * same checks as a local claim.
 */
function grantOf(body: ClaimBody, cluster: string, order: EnvClaimOrder): ClaimGrant & { token: string } {
  return {
    id: body.id,
    token: body.token ?? '',
    deadline: body.deadline,
    ownerAddr: body.ownerAddr,
    node: body.node,
    namespace: body.namespace,
    warmPool: body.warmPool,
    claimRef: body.claimRef,
    tier: body.tier,
    door: order.scope.door,
    owner: ownerMark(order.owner),
    ...(order.scope.peer !== undefined ? { peer: order.scope.peer } : {}),
    cluster,
  };
}

function failureOf(answer: Answer, what: string): ClaimFailure {
  const error = claimErrorBodySchema.safeParse(answer.body);
  if (error.success)
    return new ClaimFailure(error.data.reason, `${what}: ${error.data.error}`, { retryAfterSeconds: 1 });
  return new ClaimFailure('Unavailable', `${what}: HTTP ${answer.status}`, { retryAfterSeconds: 1 });
}
