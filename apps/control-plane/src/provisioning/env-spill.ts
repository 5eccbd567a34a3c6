// A SandboxEnv claim that found no capacity here, forwarded to the best foreign member. Only configured peers are
// candidates, at most `maxForeignAttempts` of them, best first (compareForeignCandidates); each is asked pinned to
// `<cluster>::<pool>` so it never sends the claim on. A served claim is recorded in this cluster's index in the
// caller's scope and owner, so its get, renew and release go through the same checks as a local claim.
import { claimBodySchema, type ClaimBody } from '@warmpool/api';
import {
  compareForeignCandidates,
  formatPinnedTarget,
  schedulable,
  type CapacityRecord,
  type CapacityRegistry,
} from '@warmpool/federation';
import { messageOf, type Logger } from '@warmpool/runtime';
import type { FederationMetrics } from '../federation/metrics.js';
import type { PeerAnswer, PeerClaimsClient } from '../federation/peer-claims.js';
import { abortSignalOf } from './caller-signal.js';
import type { ClaimIndex } from './claim-index.js';
import { ClaimFailure, ownerMark, type ClaimCallOptions, type ClaimGrant } from './claim-service.js';
import type { EnvClaimOrder, EnvGrant } from './env-claim-router.js';

export interface EnvSpillOptions {
  registry: CapacityRegistry;
  peers: PeerClaimsClient;
  index: ClaimIndex;
  /** Foreign members tried per claim at most (default 3). */
  maxForeignAttempts?: number;
  logger: Logger;
  metrics?: FederationMetrics | undefined;
}

export class EnvSpill {
  readonly #options: EnvSpillOptions;

  constructor(options: EnvSpillOptions) {
    this.#options = options;
  }

  /** The claim served by a foreign member, or undefined when none would serve it. */
  async spill(order: EnvClaimOrder, options: ClaimCallOptions): Promise<EnvGrant | undefined> {
    for (const candidate of this.#candidates(order)) {
      if (options.givenUp?.gone === true) throw new ClaimFailure('Timeout', 'the caller gave up');
      const served = await this.#ask(candidate, order, options);
      if (served === undefined) continue;
      const grant = grantOf(served, candidate.clusterId, order);
      await this.#record(grant, candidate.clusterId, order);
      return { grant, cluster: candidate.clusterId, memberPool: candidate.memberPool };
    }
    return undefined;
  }

  #candidates(order: EnvClaimOrder): CapacityRecord[] {
    const group = order.scalingGroup;
    return this.#options.registry
      .foreignMembers(order.namespace, order.env)
      .filter(
        (m) => (group === '' || m.scalingGroup === group) && schedulable(m) && this.#options.peers.isPeer(m.clusterId),
      )
      .sort(compareForeignCandidates)
      .slice(0, this.#options.maxForeignAttempts ?? 3);
  }

  /** The claim body a candidate served, or undefined (logged, counted) when it did not. */
  async #ask(
    candidate: CapacityRecord,
    order: EnvClaimOrder,
    options: ClaimCallOptions,
  ): Promise<ClaimBody | undefined> {
    const { logger, metrics } = this.#options;
    const target = formatPinnedTarget(candidate);
    const group = order.scalingGroup;
    let answer: PeerAnswer;
    const givenUp = options.givenUp !== undefined ? abortSignalOf(options.givenUp) : undefined;
    try {
      answer = await this.#options.peers.call(candidate.clusterId, 'POST', [order.namespace], {
        body: {
          env: order.env,
          ...(group !== '' ? { scalingGroup: group } : {}),
          target,
          ttlSeconds: order.ttlSeconds,
          claimRef: order.claimRef,
        },
        ...(givenUp !== undefined ? { signal: givenUp.signal } : {}),
        claimRefGenerated: order.claimRefGenerated,
      });
    } catch (err) {
      metrics?.forward('unreachable');
      logger.info('a foreign member could not be asked: trying the next', { target, err: messageOf(err) });
      return undefined;
    } finally {
      givenUp?.stop();
    }
    if (answer.status !== 200) {
      metrics?.forward('refused');
      logger.info('a foreign member did not serve the claim: trying the next', {
        target,
        status: answer.status,
        body: answer.body,
      });
      return undefined;
    }
    const body = claimBodySchema.safeParse(answer.body);
    if (!body.success) {
      metrics?.forward('refused');
      logger.warn('a foreign member answered an unreadable claim: trying the next', { target });
      return undefined;
    }
    metrics?.forward('served');
    return body.data;
  }

  /**
   * Records a spilled grant here. When another request took the claimRef meanwhile, the peer's sandbox is the extra
   * one: it is released there and the claim fails. When Redis cannot record it, the grant stands (the peer's node
   * holds it) and only this cluster's view of it is missing.
   */
  async #record(grant: ClaimGrant, clusterId: string, order: EnvClaimOrder): Promise<void> {
    try {
      const recorded = await this.#options.index.record(grant, '');
      if (recorded.ok) return;
      await this.#options.peers.call(clusterId, 'DELETE', [order.namespace, grant.id]).catch(() => undefined);
      throw new ClaimFailure('ClaimRefInUse', `claimRef ${order.claimRef} was claimed by another request meanwhile`);
    } catch (err) {
      if (err instanceof ClaimFailure) throw err;
      this.#options.logger.warn(
        'served by another cluster but not recorded here: release and renew must go to that cluster',
        { cluster: clusterId, id: grant.id, err },
      );
    }
  }
}

/** A claim served by another cluster, as this cluster's index records it: in the caller's scope and owner. */
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
