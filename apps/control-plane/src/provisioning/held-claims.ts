// ClaimRefs the index already holds when a batch reserves them. A served
// record is answered as recorded while its deadline lies ahead; past it, its
// node decides (alive: answered with the node's deadline; gone: reserved
// afresh). Another job's reservation is waited for, and taken over only once
// that job is neither queued nor running.
import { sleep } from '@warmpool/kube';
import type { ClaimRecord, TolerantSandboxRow } from '@warmpool/api';
import { entryOf, fail, type Work } from './batch-work.js';
import type { Reservation } from './claim-index-values.js';
import type { BatchJobHandle, ClaimerSettings, Emit } from './claimer-settings.js';
import type { GrantRecorder } from './grant-recorder.js';

/** How often a claim waiting on another job checks whether that job is still alive. */
const ALIVE_CHECK_MS = 1_000;

export class HeldClaims {
  readonly #settings: ClaimerSettings;
  readonly #recorder: GrantRecorder;

  constructor(settings: ClaimerSettings, recorder: GrantRecorder) {
    this.#settings = settings;
    this.#recorder = recorder;
  }

  /** A served record: answered, or confirmed with its node when past its recorded deadline. */
  async answerServed(job: BatchJobHandle, work: Work, record: ClaimRecord, ttlMs: number, emit: Emit): Promise<void> {
    const { agents, index, logger, nodes, now } = this.#settings;
    if (Date.parse(record.deadline) > now() || record.cluster !== undefined) {
      this.#recorder.answer(work, record, emit);
      return;
    }
    const agent = nodes().find((n) => n.node === record.node);
    let row: TolerantSandboxRow | undefined;
    try {
      row = agent === undefined ? undefined : await agents.get(agent.address, record.id);
    } catch (err) {
      logger.debug('cannot confirm a claim past its recorded deadline with its node', { err });
      work.keepReservation = true;
      fail(work, 'Unavailable', `node ${record.node} did not answer for claimRef ${work.claim.claimRef}`, 1);
      return;
    }
    if (row !== undefined) {
      const renewed = { ...record, deadline: row.deadline };
      await index.record(renewed, '');
      this.#recorder.answer(work, renewed, emit);
      return;
    }
    if (agent === undefined) {
      work.keepReservation = true;
      fail(work, 'Unavailable', `node ${record.node} of claimRef ${work.claim.claimRef} has no agent address`, 1);
      return;
    }
    await index.drop(record);
    const [again] = (await index.reserve([entryOf(work)], job.id, ttlMs)).states;
    if (again?.state === 'served') this.#recorder.answer(work, again.record, emit);
    else if (again?.state === 'busy') {
      work.keepReservation = true;
      fail(work, 'Unavailable', 'another request with the same claimRef is being served; retry', 1);
    }
    // 'new' or 'mine': pending, claimed by the next placement round.
  }

  /** Another job holds the claimRef: wait for its answer, or take over when that job is gone. True when taken over. */
  async waitForOther(
    job: BatchJobHandle,
    work: Work,
    reservation: Reservation,
    ttlMs: number,
    emit: Emit,
  ): Promise<boolean> {
    const { index, now, pollMs, jobAlive } = this.#settings;
    const ref = work.claim.claimRef;
    let current = reservation;
    let checkedAt = now();
    for (;;) {
      if (now() > job.data.deadline) {
        // Not ours: the other job keeps its reservation.
        work.keepReservation = true;
        fail(work, 'Timeout', 'another request with the same claimRef is still being served');
        return false;
      }
      if (now() - checkedAt >= ALIVE_CHECK_MS) {
        checkedAt = now();
        if (!(await jobAlive(current.job)) && (await index.takeOver(work.scope, ref, current, job.id, ttlMs))) {
          work.tried = [...current.tried];
          return true;
        }
      }
      await sleep(pollMs);
      const value = await index.peek(work.scope, ref);
      if (value !== undefined && 'id' in value) {
        this.#recorder.answer(work, value, emit);
        return false;
      }
      if (value !== undefined) {
        current = value;
        continue;
      }
      // The other job failed it and let go: reserve it for this one (its first node is chosen by the next round).
      const { states } = await index.reserve([entryOf(work)], job.id, ttlMs);
      const again = states[0];
      if (again?.state === 'new') return false;
      if (again?.state === 'served') {
        this.#recorder.answer(work, again.record, emit);
        return false;
      }
      if (again?.state === 'busy') current = again.reservation;
    }
  }
}
