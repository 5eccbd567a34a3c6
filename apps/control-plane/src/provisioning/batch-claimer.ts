// Claims every claim of one batch job on the nodes, exactly once, although
// the job itself runs at least once (a stalled job runs again elsewhere) and
// Redis may lose any key at any moment.
//
// Invariants:
// - A claimRef is reserved in the claim index for this job, with the node it
//   is sent to written ahead, before any node is asked; a node is asked only
//   while that reservation is still this job's (noteTried), so a job whose
//   reservation vanished with Redis's data stops instead of claiming twice.
// - A served claim is recorded only over this job's reservation; a claimRef
//   that meanwhile went to another job or sandbox makes ours the extra one,
//   released at once.
// - While the index recovers from a loss, a fresh reservation proves nothing:
//   the nodes are asked for the claim_ref first (once no call from before the
//   loss can still be under way), and what they hold is adopted.
// - A replay by another owner is refused (ClaimRefInUse) and shows nothing.
// - Within one job a claimRef has one door and one owner (the dispatcher
//   splits a batch where callers differ), so outcomes are keyed by claimRef.
// - A node whose claim call got no answer may still serve the claim until its
//   TriedNode `until` (the cold deadline, written ahead): it is asked by
//   claim_ref until then, and no other node is asked for that claim meanwhile;
//   when the caller's deadline comes first the claim fails Timeout and keeps
//   its reservation, so the retry asks that node first.
// - A refusal (429, a redirect answer) claimed nothing: the next node is asked
//   at once, without a lookup.
import {
  claimNameOf,
  parseNodeClaimRef,
  type BatchJob,
  type BatchProgress,
  type ClaimOutcome,
  type ClaimRecord,
  type TolerantSandboxRow,
  type TriedNode,
} from '@warmpool/api';
import type { Logger } from '@warmpool/runtime';
import { sleep } from '@warmpool/kube';
import type { AgentClient } from '../agents/client.js';
import type { AgentAddress } from '../nodes/addresses.js';
import {
  entryOf,
  fail,
  failFromRefusal,
  grantOf,
  progressOf,
  replayOf,
  reservationTtlMs,
  scopedRefOf,
  union,
  worksOf,
  type Plan,
  type Work,
} from './batch-work.js';
import {
  scopeOfNodeClaim,
  type ClaimIndex,
  type Reservation,
  type ReserveEntry,
  type ReserveResult,
} from './claim-index.js';
import type { ProvisioningMetrics } from './metrics.js';
import type { Choice, Placement, PlacementRound } from './placement.js';

export interface BatchJobHandle {
  readonly id: string;
  readonly data: BatchJob;
  /** What an earlier run of this job recorded, if it ran before. */
  readonly progress: BatchProgress | undefined;
  updateProgress(progress: BatchProgress): Promise<void>;
}

export interface BatchClaimerOptions {
  index: ClaimIndex;
  agents: AgentClient;
  placement: Placement;
  /** Every node with an agent address (asked by claim_ref while the index recovers). */
  nodes(): readonly AgentAddress[];
  /** A node's sandbox address as its NodeInventory publishes it (claims adopted from a node carry it). */
  ownerAddrOf(node: string): string | undefined;
  /** Whether a job is still queued or running (its reservations are then its own business). */
  jobAlive(id: string): Promise<boolean>;
  metrics: ProvisioningMetrics;
  logger: Logger;
  /** Nodes asked per claim and run before it fails (default 3). */
  maxAttempts?: number;
  /** How often a claim reserved by another job looks again (default 20 ms). */
  pollMs?: number;
  /** The timeout of each call to a node: a node asked less than this long ago may still be serving the claim. */
  nodeTimeoutMs: number;
  /**
   * A cold placement's call timeout, and how long after a timed-out call the node may still serve the claim (a
   * warm placement can turn into a clone or cold boot on the node). Default: nodeTimeoutMs.
   */
  coldNodeTimeoutMs?: number;
  now?: () => number;
}

/** After a node call's timeout, how long before a node that did not show a claim is taken to never serve it. */
const SETTLE_MARGIN_MS = 250;
/** How often a node that may still serve a claim is asked for it meanwhile. */
const LOOKUP_POLL_MS = 250;
/** How often a claim waiting on another job checks whether that job is still alive. */
const ALIVE_CHECK_MS = 1_000;

export class BatchClaimer {
  readonly #options: BatchClaimerOptions;
  readonly #maxAttempts: number;
  readonly #pollMs: number;
  readonly #now: () => number;
  readonly #coldNodeTimeoutMs: number;
  /** The owner address each node's claim answers carried. */
  readonly #ownerAddrs = new Map<string, string>();

  constructor(options: BatchClaimerOptions) {
    this.#options = options;
    this.#maxAttempts = Math.max(1, options.maxAttempts ?? 3);
    this.#pollMs = options.pollMs ?? 20;
    this.#now = options.now ?? Date.now;
    this.#coldNodeTimeoutMs = Math.max(options.nodeTimeoutMs, options.coldNodeTimeoutMs ?? options.nodeTimeoutMs);
  }

  /**
   * Serves the batch. `emit` gets each claim's outcome as soon as it is final
   * (a served one once it is in the claim index, so any replica finds it);
   * failures come last, once their reservations are dropped. Answers every
   * outcome, in the claims' order (a claimRef twice in a batch gets one sandbox, twice).
   */
  async serve(job: BatchJobHandle, emit: (outcome: ClaimOutcome) => void = () => {}): Promise<ClaimOutcome[]> {
    const works = worksOf(job.data);
    const ttlMs = reservationTtlMs(works);
    const round = this.#options.placement.round(job.data.key);
    const plans = works.map((work) => this.#plan(job, work, round));
    const entries = works.map((work, i): ReserveEntry => ({ ...entryOf(work), tried: plans[i]?.tried ?? [] }));
    const progress = progressOf(job, works, (i) => plans[i]?.tried ?? []);
    const [reserved] = await Promise.all([
      this.#options.index.reserve(entries, job.id, ttlMs),
      job.updateProgress(progress),
    ]);
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
      await this.#findOnNodes(
        job,
        fresh.map(({ work }) => work),
        recovering,
        emit,
      );
    for (const { work, ask } of fresh) {
      if (work.outcome !== undefined) continue;
      if (ask !== undefined) {
        work.asked = 1;
        checks.push(this.#claimOn(job, work, ask, round, emit));
      } else if (work.tried.length > 0) checks.push(this.#askTried(job, work, work.tried, emit));
    }
    await Promise.all(checks);

    for (;;) {
      const pending = works.filter((w) => w.outcome === undefined);
      if (pending.length === 0) break;
      // A claim resumed or taken over while the index recovers may be on a node no run of it wrote down.
      const unscanned = pending.filter((w) => !w.scanned);
      if (recovering !== undefined && unscanned.length > 0) {
        await this.#findOnNodes(job, unscanned, recovering, emit);
        continue;
      }
      if (this.#now() > job.data.deadline) {
        for (const work of pending) fail(work, 'Timeout', 'the claim was not served before its caller gave up');
        break;
      }
      await this.#attempt(job, pending, round, emit);
    }

    const failed = works.filter((w) => w.outcome?.ok === false);
    await this.#options.index.dropReservations(failed.filter((w) => !w.keepReservation).map(entryOf), job.id);
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
    emit: (outcome: ClaimOutcome) => void,
  ): Promise<void> {
    switch (state.state) {
      case 'served':
        await this.#answerServed(job, work, state.record, ttlMs, emit);
        return;
      case 'mine': {
        // This job ran before: the reservation holds what it sent where (this run's plan was not written, nor sent).
        const recorded = job.progress?.tried[work.claim.claimRef] ?? [];
        work.tried = union(state.reservation.tried, recorded);
        if (work.tried.length > 0) await this.#askTried(job, work, work.tried, emit);
        return;
      }
      case 'busy':
        // Taken over from a job that is gone: what its nodes hold was claimed for that job's callers, not fresh here.
        if ((await this.#waitForOther(job, work, state.reservation, ttlMs, emit)) && work.tried.length > 0)
          await this.#askTried(job, work, work.tried, emit, false);
        return;
    }
  }

  /**
   * A served claim is answered as recorded while its deadline lies ahead. Past
   * it, its node decides: the sandbox lives (renewed there without the index)
   * and is answered with the node's deadline, or it is gone and the claimRef
   * is reserved afresh for this job.
   */
  async #answerServed(
    job: BatchJobHandle,
    work: Work,
    record: ClaimRecord,
    ttlMs: number,
    emit: (outcome: ClaimOutcome) => void,
  ): Promise<void> {
    if (Date.parse(record.deadline) > this.#now() || record.cluster !== undefined) {
      this.#answer(work, record, emit);
      return;
    }
    const agent = this.#options.nodes().find((n) => n.node === record.node);
    let row: TolerantSandboxRow | undefined;
    try {
      row = agent === undefined ? undefined : await this.#options.agents.get(agent.address, record.id);
    } catch (err) {
      this.#options.logger.debug('cannot confirm a claim past its recorded deadline with its node', { err });
      work.keepReservation = true;
      fail(work, 'Unavailable', `node ${record.node} did not answer for claimRef ${work.claim.claimRef}`, 1);
      return;
    }
    if (row !== undefined) {
      const renewed = { ...record, deadline: row.deadline };
      await this.#options.index.record(renewed, '');
      this.#answer(work, renewed, emit);
      return;
    }
    if (agent === undefined) {
      work.keepReservation = true;
      fail(work, 'Unavailable', `node ${record.node} of claimRef ${work.claim.claimRef} has no agent address`, 1);
      return;
    }
    await this.#options.index.drop(record);
    const [again] = (await this.#options.index.reserve([entryOf(work)], job.id, ttlMs)).states;
    if (again?.state === 'served') this.#answer(work, again.record, emit);
    else if (again?.state === 'busy') {
      work.keepReservation = true;
      fail(work, 'Unavailable', 'another request with the same claimRef is being served; retry', 1);
    }
    // 'new' or 'mine': pending, claimed by the next placement round.
  }

  /** One placement round for the claims still pending: choose a node each, write the choices ahead, ask the nodes. */
  async #attempt(
    job: BatchJobHandle,
    pending: readonly Work[],
    round: PlacementRound,
    emit: (outcome: ClaimOutcome) => void,
  ): Promise<void> {
    const asks: Array<{ work: Work; tried: TriedNode }> = [];
    for (const work of pending) {
      const choice = work.asked >= this.#maxAttempts ? undefined : round.choose(new Set(work.tried.map((t) => t.node)));
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

  async #claimOn(
    job: BatchJobHandle,
    work: Work,
    tried: TriedNode,
    round: PlacementRound,
    emit: (outcome: ClaimOutcome) => void,
  ): Promise<void> {
    const answer = await this.#options.agents.claim(
      tried.address,
      job.data.key,
      work.claim.ttlSeconds,
      work.nodeRef,
      this.#callTimeoutMs(tried.tier),
    );
    this.#options.metrics.nodeClaim(answer.ok ? 'served' : answer.refusal.kind);
    if (answer.ok) {
      const { id, token, deadline, ownerAddr } = answer.claim;
      if (ownerAddr !== undefined) this.#ownerAddrs.set(tried.node, ownerAddr);
      // A node that names no (usable) owner address: the one it answered before, or its inventory publishes.
      const owner = ownerAddr ?? this.#ownerAddrOf(tried.node);
      const grant = grantOf(job.data, work, tried, { id, token, deadline, owner_addr: owner });
      await this.#served(job, work, grant, tried, emit, true);
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
    tried.until = Math.max(tried.until ?? 0, tried.at + this.#coldNodeTimeoutMs);
    await this.#writeAhead(job, [work]);
    await this.#askTried(job, work, [tried], emit);
  }

  /** A node about to be asked, with how long it may serve the claim when that is longer than the warm timeout. */
  #triedOn(choice: Choice): TriedNode {
    const at = Date.now();
    return {
      node: choice.node.name,
      address: choice.node.address,
      tier: choice.tier,
      at,
      ...(choice.tier === 'cold' ? { until: at + this.#coldNodeTimeoutMs } : {}),
    };
  }

  /** A claim call's deadline: a cold placement boots on the node (sandboxd's cold window), a warm one hands over. */
  #callTimeoutMs(tier: TriedNode['tier']): number {
    return tier === 'cold' ? this.#coldNodeTimeoutMs : this.#options.nodeTimeoutMs;
  }

  /**
   * Asks nodes a claim was sent to whether they hold it, and adopts what one
   * holds. A node that cannot be asked fails the claim Timeout and keeps its
   * reservation, so a retry with the same claimRef asks that node first.
   */
  async #askTried(
    job: BatchJobHandle,
    work: Work,
    nodes: readonly TriedNode[],
    emit: (outcome: ClaimOutcome) => void,
    sentByThisJob = true,
  ): Promise<void> {
    for (const tried of nodes) {
      if (work.outcome !== undefined) return;
      let rows: TolerantSandboxRow[];
      try {
        rows = await this.#rowsOf(tried.address, work.nodeRef);
        // Its call may still be under way on the node (asked by a run that died moments ago, or timed out while the
        // node boots it): look again until it cannot be, or until the caller gives up.
        const settledAt = (tried.until ?? tried.at + this.#options.nodeTimeoutMs) + SETTLE_MARGIN_MS;
        while (rows.length === 0 && Date.now() < settledAt) {
          if (this.#now() > job.data.deadline) {
            work.keepReservation = true;
            fail(
              work,
              'Timeout',
              `node ${tried.node} may still serve the claim (a slow or cold claim); retry with the same claimRef`,
              1,
            );
            return;
          }
          await sleep(Math.min(LOOKUP_POLL_MS, Math.max(0, settledAt - Date.now())));
          rows = await this.#rowsOf(tried.address, work.nodeRef);
        }
        if (await this.#adopt(job, work, tried, rows, emit, sentByThisJob)) return;
      } catch (err) {
        this.#options.logger.warn(
          'cannot ask a node whether it holds a claim: failing it Timeout, its reservation kept',
          { node: tried.node, claimRef: work.nodeRef, err },
        );
        work.keepReservation = true;
        fail(work, 'Timeout', `node ${tried.node} did not answer and may hold the claim; retry with the same claimRef`);
        return;
      }
    }
  }

  /** The node's rows under exactly this claim_ref, filtered here: an older sandboxd ignores the filter. */
  async #rowsOf(address: string, nodeRef: string): Promise<TolerantSandboxRow[]> {
    return (await this.#options.agents.findByClaimRef(address, nodeRef)).filter((row) => row.claim_ref === nodeRef);
  }

  /** Takes over the first of a node's rows for this claim (an extra one is released); false when there is none. */
  async #adopt(
    job: BatchJobHandle,
    work: Work,
    tried: TriedNode,
    rows: readonly TolerantSandboxRow[],
    emit: (outcome: ClaimOutcome) => void,
    /** The node claim was this job's own (any run of it): the adopted sandbox is fresh for its callers. */
    sentByThisJob = false,
  ): Promise<boolean> {
    const [first, ...extra] = rows;
    for (const row of extra) {
      this.#options.logger.error('a node holds one claim_ref twice: releasing the extra sandbox', {
        node: tried.node,
        claimRef: work.nodeRef,
        id: row.id,
      });
      await this.#options.agents.release(tried.address, row.id);
    }
    if (first === undefined) return false;
    const full = await this.#options.agents.get(tried.address, first.id);
    if (full?.token === undefined) return false;
    this.#options.metrics.adopted();
    const answer = {
      id: full.id,
      token: full.token,
      deadline: full.deadline,
      owner_addr: this.#ownerAddrOf(tried.node),
    };
    await this.#served(job, work, grantOf(job.data, work, tried, answer), tried, emit, sentByThisJob);
    return true;
  }

  /**
   * The index may have lost entries: before any fresh claim is sent, every
   * node is asked (one list each) whether it already holds one of them, once
   * no node call from before the loss can still be under way.
   */
  async #findOnNodes(
    job: BatchJobHandle,
    fresh: readonly Work[],
    since: number,
    emit: (outcome: ClaimOutcome) => void,
  ): Promise<void> {
    for (const work of fresh) work.scanned = true;
    const settledAt = since + this.#options.nodeTimeoutMs + SETTLE_MARGIN_MS;
    if (Date.now() < settledAt) await sleep(settledAt - Date.now());
    const byScopedRef = new Map(fresh.map((work) => [scopedRefOf(work.scope, work.claim.claimRef), work]));
    await Promise.all(
      this.#options.nodes().map(async (agent) => {
        let rows: TolerantSandboxRow[];
        try {
          rows = await this.#options.agents.list(agent.address);
        } catch (err) {
          // It may hold any of them: none of this batch's fresh claims may be sent anywhere else.
          this.#options.logger.warn('index recovery: a node could not be listed; its claims cannot be ruled out', {
            node: agent.node,
            err,
          });
          for (const work of fresh) {
            work.keepReservation = true;
            fail(work, 'Unavailable', `recovering the claim index: node ${agent.node} did not answer`, 1);
          }
          return;
        }
        const tried: Omit<TriedNode, 'tier'> = { node: agent.node, address: agent.address, at: 0 };
        for (const row of rows) {
          const owner = parseNodeClaimRef(row.claim_ref);
          if (owner === undefined || owner.namespace !== job.data.namespace) continue;
          const work = byScopedRef.get(scopedRefOf(scopeOfNodeClaim(owner), claimNameOf(owner).name));
          if (work === undefined || work.outcome !== undefined) continue;
          if (row.claim_ref !== work.nodeRef) {
            fail(work, 'ClaimRefInUse', `claimRef ${work.claim.claimRef} is held by another owner`);
            continue;
          }
          await this.#adopt(job, work, { ...tried, tier: 'warm' }, [row], emit);
        }
      }),
    );
  }

  /** Another job holds the claimRef: wait for its answer, or take over when that job is gone. True when taken over. */
  async #waitForOther(
    job: BatchJobHandle,
    work: Work,
    reservation: Reservation,
    ttlMs: number,
    emit: (outcome: ClaimOutcome) => void,
  ): Promise<boolean> {
    const { index } = this.#options;
    const ref = work.claim.claimRef;
    let current = reservation;
    let checkedAt = this.#now();
    for (;;) {
      if (this.#now() > job.data.deadline) {
        // Not ours: the other job keeps its reservation.
        work.keepReservation = true;
        fail(work, 'Timeout', 'another request with the same claimRef is still being served');
        return false;
      }
      if (this.#now() - checkedAt >= ALIVE_CHECK_MS) {
        checkedAt = this.#now();
        if (
          !(await this.#options.jobAlive(current.job)) &&
          (await index.takeOver(work.scope, ref, current, job.id, ttlMs))
        ) {
          work.tried = [...current.tried];
          return true;
        }
      }
      await sleep(this.#pollMs);
      const value = await index.peek(work.scope, ref);
      if (value !== undefined && 'id' in value) {
        this.#answer(work, value, emit);
        return false;
      }
      if (value !== undefined) {
        current = value;
        continue;
      }
      // The other job failed it and let go: reserve it for this one (its first node is chosen by #attempt).
      const { states } = await index.reserve([entryOf(work)], job.id, ttlMs);
      const again = states[0];
      if (again?.state === 'new') return false;
      if (again?.state === 'served') {
        this.#answer(work, again.record, emit);
        return false;
      }
      if (again?.state === 'busy') current = again.reservation;
    }
  }

  /** Writes the nodes about to be asked; answers the works whose reservation is no longer this job's. */
  async #writeAhead(job: BatchJobHandle, works: readonly Work[]): Promise<Set<Work>> {
    const progress = progressOf(job, works, (i) => (works[i] as Work).tried);
    const [lost] = await Promise.all([
      this.#options.index.noteTried(
        works.map((w) => ({ ...entryOf(w), tried: w.tried })),
        job.id,
        reservationTtlMs(works),
      ),
      job.updateProgress(progress),
    ]);
    return new Set(works.filter((w) => lost.has(this.#options.index.refKey(w.scope, w.claim.claimRef))));
  }

  /**
   * Served on a node: recorded in the index over this job's reservation,
   * then answered. When the claimRef went to another job or sandbox
   * meanwhile (Redis lost the reservation), this sandbox is the extra one.
   */
  async #served(
    job: BatchJobHandle,
    work: Work,
    grant: ClaimRecord,
    tried: TriedNode,
    emit: (outcome: ClaimOutcome) => void,
    /** Claimed on a node for this job (its callers'), not found there for someone else. */
    claimedNow = false,
  ): Promise<void> {
    if (work.outcome !== undefined) return;
    const recorded = await this.#options.index.record(grant, job.id);
    if (!recorded.ok) {
      this.#options.logger.warn('a claimRef was served twice after the claim index lost it: releasing the extra', {
        claimRef: work.nodeRef,
        node: tried.node,
        id: grant.id,
      });
      await this.#options.agents.release(tried.address, grant.id).catch((err: unknown) =>
        this.#options.logger.error('could not release the extra sandbox; its node reaps it at its deadline', {
          id: grant.id,
          err,
        }),
      );
      const holder = recorded.holder;
      if (holder !== undefined && 'id' in holder) this.#answer(work, holder, emit);
      else fail(work, 'Unavailable', 'another request with the same claimRef is being served; retry', 1);
      work.keepReservation = true;
      return;
    }
    // Fresh only for a node claim this job made: one found on a node may have been served for another caller.
    work.outcome = { ok: true, claimRef: work.claim.claimRef, grant, ...(claimedNow ? { fresh: true as const } : {}) };
    emit(work.outcome);
  }

  /** The node's owner address as its last claim answer here named it, else as its inventory publishes it. */
  #ownerAddrOf(node: string): string {
    return this.#ownerAddrs.get(node) ?? this.#options.ownerAddrOf(node) ?? '';
  }

  /** Served already (by an earlier job, or the one this waited for): answered only to its owner. */
  #answer(work: Work, record: ClaimRecord, emit: (outcome: ClaimOutcome) => void): void {
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
