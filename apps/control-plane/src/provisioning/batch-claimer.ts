// Claims every claim of one batch job on the nodes exactly once, although the
// job runs at least once (a stalled job runs again elsewhere) and Redis may
// lose any key at any moment.
//
// Invariants:
// - Before any node is asked, the claimRef is reserved for this job with that
//   node written ahead; a node is asked only while the reservation is still
//   this job's (noteTried), so a job whose reservation vanished stops.
// - A served claim is recorded only over this job's reservation, else it is
//   the extra one and released (GrantRecorder).
// - While the index recovers from a loss, the nodes are asked for the
//   claim_ref before a fresh claim is sent (NodeLookup.findOnNodes).
// - A node whose call got no answer is asked by claim_ref until its TriedNode
//   `until`, and no other node is asked for that claim meanwhile.
// - Within one job a claimRef has one door and one owner (the dispatcher
//   splits batches where callers differ), so outcomes are keyed by claimRef.
import type { ClaimOutcome, TriedNode } from '@warmpool/api';
import {
  entryOf,
  fail,
  failFromRefusal,
  grantOf,
  progressOf,
  replayOf,
  reservationTtlMs,
  union,
  worksOf,
  type Plan,
  type Work,
} from './batch-work.js';
import type { ReserveEntry, ReserveResult } from './claim-index-values.js';
import {
  claimerSettings,
  type BatchClaimerOptions,
  type BatchJobHandle,
  type ClaimerSettings,
  type Emit,
} from './claimer-settings.js';
import { GrantRecorder } from './grant-recorder.js';
import { HeldClaims } from './held-claims.js';
import { NodeLookup } from './node-lookup.js';
import type { Choice, Placement, PlacementRound } from './placement.js';

export type { BatchClaimerOptions, BatchJobHandle } from './claimer-settings.js';

export class BatchClaimer {
  readonly #settings: ClaimerSettings;
  readonly #placement: Placement;
  readonly #recorder: GrantRecorder;
  readonly #lookup: NodeLookup;
  readonly #held: HeldClaims;
  /**
   * Every claim of each batch being served: the job's progress is written whole each time (it replaces the one
   * written before), so a write-ahead for some of its claims still carries the nodes the others were sent to.
   */
  readonly #batches = new WeakMap<BatchJobHandle, readonly Work[]>();

  constructor(options: BatchClaimerOptions) {
    this.#settings = claimerSettings(options);
    this.#placement = options.placement;
    this.#recorder = new GrantRecorder(this.#settings);
    this.#lookup = new NodeLookup(this.#settings, this.#recorder);
    this.#held = new HeldClaims(this.#settings, this.#recorder);
  }

  /**
   * Serves the batch. `emit` gets each claim's outcome as soon as it is final
   * (a served one once it is in the claim index, so any replica finds it);
   * failures come last, once their reservations are dropped. Answers every
   * outcome, in the claims' order (a claimRef twice in a batch gets one sandbox, twice).
   */
  async serve(job: BatchJobHandle, emit: Emit = () => {}): Promise<ClaimOutcome[]> {
    const works = worksOf(job.data);
    this.#batches.set(job, works);
    const round = this.#placement.round(job.data.key);
    const recovering = await this.#reserveAndSend(job, works, round, emit);
    for (;;) {
      const pending = works.filter((w) => w.outcome === undefined);
      if (pending.length === 0) break;
      // A claim resumed or taken over while the index recovers may be on a node no run of it wrote down.
      const unscanned = pending.filter((w) => !w.scanned);
      if (recovering !== undefined && unscanned.length > 0) {
        await this.#lookup.findOnNodes(job, unscanned, recovering, emit);
        continue;
      }
      if (this.#settings.now() > job.data.deadline) {
        for (const work of pending) fail(work, 'Timeout', 'the claim was not served before its caller gave up');
        break;
      }
      await this.#attempt(job, pending, round, emit);
    }
    return this.#finish(job, works, emit);
  }

  /**
   * Reserves the batch's claimRefs (the first node of each written ahead) and sends the fresh ones there; resumes
   * the others. Answers since when the index recovers from a loss, if it does.
   */
  async #reserveAndSend(
    job: BatchJobHandle,
    works: readonly Work[],
    round: PlacementRound,
    emit: Emit,
  ): Promise<number | undefined> {
    const ttlMs = reservationTtlMs(works);
    const plans = works.map((work) => this.#plan(job, work, round));
    const entries = works.map((work, i): ReserveEntry => ({ ...entryOf(work), tried: plans[i]?.tried ?? [] }));
    const progress = progressOf(job, works, (i) => plans[i]?.tried ?? []);
    const reserving = performance.now();
    const reserved = await this.#settings.index.reserve(entries, job.id, ttlMs, {
      key: job.progressKey,
      value: progress,
    });
    this.#settings.metrics.stage('reserve', reserving);
    const recovering = reserved.recoveringSince;
    const fresh: Array<{ work: Work; ask: TriedNode | undefined }> = [];
    const checks: Array<Promise<void>> = [];
    reserved.states.forEach((state, i) => {
      const work = works[i] as Work;
      const plan = plans[i] as Plan;
      if (state.state === 'new') {
        work.tried = plan.tried;
        fresh.push({ work, ask: plan.ask });
      } else checks.push(this.#resume(job, work, state, ttlMs, emit));
    });
    if (recovering !== undefined && fresh.length > 0)
      await this.#lookup.findOnNodes(
        job,
        fresh.map(({ work }) => work),
        recovering,
        emit,
      );
    // Past its deadline every caller of the job has its answer (Timeout, or Unavailable for an add that timed out and
    // ran once Redis answered again): a claim no node was asked for yet is claimed nowhere, so nothing is left behind.
    const late = this.#settings.now() > job.data.deadline;
    for (const { work, ask } of fresh) {
      if (work.outcome !== undefined) continue;
      if (ask !== undefined && late) fail(work, 'Timeout', 'the claim was not served before its caller gave up');
      else if (ask !== undefined) {
        work.asked = 1;
        checks.push(this.#claimOn(job, work, ask, round, emit));
      } else if (work.tried.length > 0) checks.push(this.#lookup.askTried(job, work, work.tried, emit));
    }
    await Promise.all(checks);
    return recovering;
  }

  /** Drops the failed claims' reservations (unless a node may hold them), answers them, and lists every outcome. */
  async #finish(job: BatchJobHandle, works: readonly Work[], emit: Emit): Promise<ClaimOutcome[]> {
    const failed = works.filter((w) => w.outcome?.ok === false);
    await this.#settings.index.dropReservations(failed.filter((w) => !w.keepReservation).map(entryOf), job.id);
    for (const work of failed) emit(work.outcome as ClaimOutcome);
    const byRef = new Map(works.map((w) => [w.claim.claimRef, w]));
    const answered = new Set<string>();
    return job.data.claims.map((claim) => {
      const outcome = (byRef.get(claim.claimRef) as Work).outcome as ClaimOutcome;
      const first = !answered.has(claim.claimRef);
      answered.add(claim.claimRef);
      return first ? outcome : replayOf(outcome);
    });
  }

  /** Where a new claim goes, chosen before reserving so the reservation carries it (written ahead). */
  #plan(job: BatchJobHandle, work: Work, round: PlacementRound): Plan {
    const recorded = job.progress?.tried[work.claim.claimRef] ?? [];
    // Asked by an earlier run of this job: those nodes are asked whether they hold it before anything else.
    if (recorded.length > 0) return { tried: [...recorded], ask: undefined };
    const choice = round.choose();
    if (choice === undefined) return { tried: [], ask: undefined };
    const ask = this.#triedOn(choice);
    return { tried: [ask], ask };
  }

  /** A claimRef the index already knew: served, this job's from an earlier run, or another job's. */
  async #resume(
    job: BatchJobHandle,
    work: Work,
    state: Exclude<ReserveResult, { state: 'new' }>,
    ttlMs: number,
    emit: Emit,
  ): Promise<void> {
    switch (state.state) {
      case 'served':
        await this.#held.answerServed(job, work, state.record, ttlMs, emit);
        return;
      case 'mine': {
        // This job ran before: the reservation holds what it sent where (this run's plan was not written, nor sent).
        const recorded = job.progress?.tried[work.claim.claimRef] ?? [];
        work.tried = union(state.reservation.tried, recorded);
        if (work.tried.length > 0) await this.#lookup.askTried(job, work, work.tried, emit);
        return;
      }
      case 'busy':
        // Taken over from a job that is gone: what its nodes hold was claimed for that job's callers, not fresh here.
        if ((await this.#held.waitForOther(job, work, state.reservation, ttlMs, emit)) && work.tried.length > 0)
          await this.#lookup.askTried(job, work, work.tried, emit, false);
        return;
    }
  }

  /** One placement round for the claims still pending: choose a node each, write the choices ahead, ask the nodes. */
  async #attempt(job: BatchJobHandle, pending: readonly Work[], round: PlacementRound, emit: Emit): Promise<void> {
    const asks: Array<{ work: Work; tried: TriedNode }> = [];
    for (const work of pending) {
      const choice =
        work.asked >= this.#settings.maxAttempts ? undefined : round.choose(new Set(work.tried.map((t) => t.node)));
      if (choice === undefined) {
        failFromRefusal(work);
        continue;
      }
      const tried = this.#triedOn(choice);
      work.tried.push(tried);
      work.asked++;
      asks.push({ work, tried });
    }
    if (asks.length === 0) return;
    const lost = await this.#writeAhead(
      job,
      asks.map((a) => a.work),
    );
    await Promise.all(
      asks.map(({ work, tried }) => {
        if (!lost.has(work)) return this.#claimOn(job, work, tried, round, emit);
        // Not ours any more (Redis lost it, or another job took it over): asking a node could claim twice.
        fail(
          work,
          'Unavailable',
          'the claim index lost this claim while it was served; retry with the same claimRef',
          1,
        );
        work.keepReservation = true;
        return Promise.resolve();
      }),
    );
  }

  async #claimOn(job: BatchJobHandle, work: Work, tried: TriedNode, round: PlacementRound, emit: Emit): Promise<void> {
    const { agents, metrics } = this.#settings;
    const asked = performance.now();
    const answer = await agents.claim(
      tried.address,
      job.data.key,
      work.claim.ttlSeconds,
      work.nodeRef,
      this.#callTimeoutMs(tried.tier),
    );
    metrics.stage('node', asked);
    metrics.nodeClaim(answer.ok ? 'served' : answer.refusal.kind);
    if (answer.ok) {
      const { id, token, deadline, ownerAddr } = answer.claim;
      if (ownerAddr !== undefined) this.#recorder.noteOwnerAddr(tried.node, ownerAddr);
      // A node that names no (usable) owner address: the one it answered before, or its inventory publishes.
      const owner = ownerAddr ?? this.#recorder.ownerAddrOf(tried.node);
      const grant = grantOf(job.data, work, tried, { id, token, deadline, owner_addr: owner });
      await this.#recorder.served(job, work, grant, tried, emit, true);
      return;
    }
    work.lastRefusal = answer.refusal;
    if (answer.refusal.kind === 'refused') return;
    // Full, draining, redirecting (nothing was claimed there: no lookup) or silent: no more claims of this batch go
    // there.
    round.exclude(tried.node);
    if (answer.refusal.kind !== 'unreachable') return;
    // Silent: it may have served the claim, or still be booting it (a warm placement can turn cold on the node), so
    // it may serve it up to the cold deadline. Written ahead, so a retry of this claimRef asks it as long; then asked
    // until then (or until the caller gives up: Timeout, the reservation kept) before any other node is tried.
    tried.until = Math.max(tried.until ?? 0, tried.at + this.#settings.coldNodeTimeoutMs);
    await this.#writeAhead(job, [work]);
    await this.#lookup.askTried(job, work, [tried], emit);
  }

  /** A node about to be asked, with how long it may serve the claim when that is longer than the warm timeout. */
  #triedOn(choice: Choice): TriedNode {
    const at = Date.now();
    return {
      node: choice.node.name,
      address: choice.node.address,
      tier: choice.tier,
      at,
      ...(choice.tier === 'cold' ? { until: at + this.#settings.coldNodeTimeoutMs } : {}),
    };
  }

  /** A claim call's deadline: a cold placement boots on the node (sandboxd's cold window), a warm one hands over. */
  #callTimeoutMs(tier: TriedNode['tier']): number {
    return tier === 'cold' ? this.#settings.coldNodeTimeoutMs : this.#settings.nodeTimeoutMs;
  }

  /**
   * Writes the nodes about to be asked, with the job's whole progress (every claim of the batch, not only these);
   * answers the works whose reservation is no longer this job's.
   */
  async #writeAhead(job: BatchJobHandle, works: readonly Work[]): Promise<Set<Work>> {
    const { index } = this.#settings;
    const batch = this.#batches.get(job) ?? works;
    const progress = progressOf(job, batch, (i) => (batch[i] as Work).tried);
    const lost = await index.noteTried(
      works.map((w) => ({ ...entryOf(w), tried: w.tried })),
      job.id,
      reservationTtlMs(works),
      { key: job.progressKey, value: progress },
    );
    return new Set(works.filter((w) => lost.has(index.refKey(w.scope, w.claim.claimRef))));
  }
}
