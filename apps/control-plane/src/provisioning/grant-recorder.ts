// Answers a claim of a batch as served. A sandbox claimed on a node is
// recorded in the claim index over this job's reservation before it is
// answered; when the claimRef went to another job or sandbox meanwhile
// (Redis lost the reservation), this sandbox is the extra one and is
// released. A record found in the index is answered only to its owner.
import type { ClaimRecord, TriedNode } from '@warmpool/api';
import { fail, type Work } from './batch-work.js';
import type { BatchJobHandle, ClaimerSettings, Emit } from './claimer-settings.js';

export class GrantRecorder {
  readonly #settings: ClaimerSettings;
  /** The owner address each node's claim answers carried. */
  readonly #ownerAddrs = new Map<string, string>();

  constructor(settings: ClaimerSettings) {
    this.#settings = settings;
  }

  /** A node named its owner address in a claim answer. */
  noteOwnerAddr(node: string, ownerAddr: string): void {
    this.#ownerAddrs.set(node, ownerAddr);
  }

  /** The node's owner address as its last claim answer here named it, else as its inventory publishes it. */
  ownerAddrOf(node: string): string {
    return this.#ownerAddrs.get(node) ?? this.#settings.ownerAddrOf(node) ?? '';
  }

  /**
   * Served on a node: recorded over this job's reservation, then answered.
   * `claimedNow`: claimed on a node for this job's callers, not found there for someone else.
   */
  async served(
    job: BatchJobHandle,
    work: Work,
    grant: ClaimRecord,
    tried: TriedNode,
    emit: Emit,
    claimedNow = false,
  ): Promise<void> {
    if (work.outcome !== undefined) return;
    const { index, agents, logger, metrics } = this.#settings;
    const recording = performance.now();
    const recorded = await index.record(grant, job.id);
    metrics.stage('record', recording);
    if (!recorded.ok) {
      logger.warn('a claimRef was served twice after the claim index lost it: releasing the extra', {
        claimRef: work.nodeRef,
        node: tried.node,
        id: grant.id,
      });
      await agents.release(tried.address, grant.id).catch((err: unknown) =>
        logger.error('could not release the extra sandbox; its node reaps it at its deadline', {
          id: grant.id,
          err,
        }),
      );
      const holder = recorded.holder;
      if (holder !== undefined && 'id' in holder) this.answer(work, holder, emit);
      else fail(work, 'Unavailable', 'another request with the same claimRef is being served; retry', 1);
      work.keepReservation = true;
      return;
    }
    // Fresh only for a node claim this job made: one found on a node may have been served for another caller.
    work.outcome = { ok: true, claimRef: work.claim.claimRef, grant, ...(claimedNow ? { fresh: true as const } : {}) };
    emit(work.outcome);
  }

  /** Served already (by an earlier job, or the one this waited for): answered only to its owner. */
  answer(work: Work, record: ClaimRecord, emit: Emit): void {
    if (work.outcome !== undefined) return;
    if (record.owner !== work.claim.owner) {
      work.keepReservation = true;
      fail(work, 'ClaimRefInUse', `claimRef ${work.claim.claimRef} is held by another owner`);
      return;
    }
    work.outcome = { ok: true, claimRef: work.claim.claimRef, grant: record };
    emit(work.outcome);
  }
}
