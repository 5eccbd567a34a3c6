// Serves one batch job: every claim of the batch placed on a node and claimed
// through its agent, exactly once although the job itself runs at least once
// (a stalled job — its worker died or froze — runs again on another worker).
//
// How "exactly once" holds:
// - Each claimRef is reserved in the claim index for this job before any node
//   is asked; a claimRef already served answers the served sandbox, one
//   reserved by another live job waits for it.
// - Before asking a node, the job writes which node it asks (in the index
//   reservation — the same Lua call that reserves — and in the job's
//   progress). A job that finds its own
//   reservation with tried nodes (it ran before), or takes over the reservation
//   of a job that is gone, first asks those nodes for the claim_ref
//   (GET /v1/sandboxes?claim_ref=) and adopts what they hold.
// - A node that did not answer may have served the claim: it is asked by
//   claim_ref before any other node is tried; if it still cannot be asked, the
//   claim fails Timeout and keeps its reservation, so a retry asks that node
//   first.
import type {
  BatchClaim,
  BatchJob,
  BatchProgress,
  ClaimFailureReason,
  ClaimOutcome,
  ClaimRecord,
  TriedNode,
} from '@warmpool/api';
import type { Logger } from '@warmpool/runtime';
import type { AgentClaims, Refusal } from './agent-claims.js';
import type { ClaimIndex, Reservation } from './claim-index.js';
import type { ProvisioningMetrics } from './metrics.js';
import type { Placement, PlacementRound } from './placement.js';
import { sleep } from '@warmpool/kube';

export interface BatchJobHandle {
  readonly id: string;
  readonly data: BatchJob;
  /** What an earlier run of this job recorded, if it ran before. */
  readonly progress: BatchProgress | undefined;
  updateProgress(progress: BatchProgress): Promise<void>;
}

export interface BatchServerOptions {
  index: ClaimIndex;
  agents: AgentClaims;
  placement: Placement;
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
  now?: () => number;
}

/** Where one claim of the batch stands. */
interface Work {
  readonly claim: BatchClaim;
  /** `<namespace>/<claimRef>`, what the node records. */
  readonly nodeRef: string;
  /** Every node asked for it, by any run of any job (never asked again: they refused or were checked). */
  tried: TriedNode[];
  /** Nodes asked by this run. */
  asked: number;
  outcome: ClaimOutcome | undefined;
  /** Hands the outcome to the callers as soon as it is final (a served claim once it is in the index). */
  readonly emit: (outcome: ClaimOutcome) => void;
  lastRefusal: Refusal | undefined;
  /** Keep the reservation when failing: a node may hold the claim and could not be asked. */
  keepReservation: boolean;
}

/** After a node call's timeout, how long before a node that did not show a claim is taken to never serve it. */
const SETTLE_MARGIN_MS = 250;
/** A reservation outlives the longest lease of its batch by this much. */
const RESERVATION_GRACE_MS = 30_000;
/** How often a claim waiting on another job checks whether that job is still alive. */
const ALIVE_CHECK_MS = 1_000;

export class BatchServer {
  readonly #o: BatchServerOptions;
  readonly #maxAttempts: number;
  readonly #pollMs: number;
  readonly #now: () => number;
  /** The owner address each node's claim answers carried (adopted claims have none of their own). */
  readonly #ownerAddrs = new Map<string, string>();

  constructor(options: BatchServerOptions) {
    this.#o = options;
    this.#maxAttempts = Math.max(1, options.maxAttempts ?? 3);
    this.#pollMs = options.pollMs ?? 20;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Serves the batch. `emit` gets each claim's outcome as soon as it is final
   * (a served one once it is in the claim index, so any replica finds it), so
   * a caller does not wait for the slowest claim of its batch; failures come
   * last, once their reservations are dropped. Answers every outcome, in the
   * claims' order (a claimRef twice in a batch gets one sandbox, twice: fresh
   * for its first position only).
   */
  async serve(job: BatchJobHandle, emit: (outcome: ClaimOutcome) => void = () => {}): Promise<ClaimOutcome[]> {
    const { namespace, claims } = job.data;
    const unique = new Map<string, Work>();
    for (const claim of claims) {
      if (unique.has(claim.claimRef)) continue;
      unique.set(claim.claimRef, {
        claim,
        nodeRef: `${namespace}/${claim.claimRef}`,
        tried: [],
        asked: 0,
        outcome: undefined,
        emit,
        lastRefusal: undefined,
        keepReservation: false,
      });
    }
    const works = [...unique.values()];
    const ttlMs = reservationTtlMs(works);

    // Where each new claim goes is chosen before reserving, so the reservation carries it: written ahead in the same
    // round trip.
    const round = this.#o.placement.round(job.data.key);
    const plans = works.map((work): { tried: TriedNode[]; ask: TriedNode | undefined } => {
      const recorded = job.progress?.tried[work.claim.claimRef] ?? [];
      // Asked by an earlier run of this job: those nodes are asked whether they hold it before anything else.
      if (recorded.length > 0) return { tried: [...recorded], ask: undefined };
      const choice = round.choose();
      if (choice === undefined) return { tried: [], ask: undefined };
      const ask: TriedNode = {
        node: choice.node.name,
        address: choice.node.address,
        tier: choice.tier,
        at: Date.now(),
      };
      return { tried: [ask], ask };
    });
    const progress: BatchProgress = { tried: { ...(job.progress?.tried ?? {}) } };
    works.forEach((work, i) => {
      const tried = plans[i]?.tried ?? [];
      if (tried.length > 0) progress.tried[work.claim.claimRef] = tried;
    });
    const [states] = await Promise.all([
      this.#o.index.reserve(
        namespace,
        works.map((w) => w.claim.claimRef),
        job.id,
        ttlMs,
        plans.map((p) => p.tried),
      ),
      job.updateProgress(progress),
    ]);
    const checks: Array<Promise<void>> = [];
    states.forEach((state, i) => {
      const work = works[i] as Work;
      const plan = plans[i] as { tried: TriedNode[]; ask: TriedNode | undefined };
      const recorded = job.progress?.tried[work.claim.claimRef] ?? [];
      switch (state.state) {
        case 'served':
          this.#answer(work, state.record);
          return;
        case 'new':
          work.tried = plan.tried;
          if (plan.ask !== undefined) {
            work.asked = 1;
            checks.push(this.#claimOn(job.data, work, plan.ask, round));
          } else if (work.tried.length > 0) {
            checks.push(this.#askTried(job.data, work, work.tried));
          }
          return;
        case 'mine':
          // This job ran before: the reservation holds what it sent where (this run's plan was not written, nor sent).
          work.tried = union(state.reservation.tried, recorded);
          if (work.tried.length > 0) checks.push(this.#askTried(job.data, work, work.tried));
          return;
        case 'busy':
          checks.push(
            this.#waitForOther(job, work, state.reservation, ttlMs).then(async (takenOver) => {
              if (takenOver && work.tried.length > 0) await this.#askTried(job.data, work, work.tried);
            }),
          );
          return;
      }
    });
    await Promise.all(checks);

    for (;;) {
      const pending = works.filter((w) => w.outcome === undefined);
      if (pending.length === 0) break;
      if (this.#now() > job.data.deadline) {
        for (const work of pending) this.#fail(work, 'Timeout', 'the claim was not served before its caller gave up');
        break;
      }
      await this.#attempt(job, pending, round);
    }

    const failed = works.filter((w) => w.outcome?.ok === false);
    await this.#o.index.dropReservations(
      namespace,
      failed.filter((w) => !w.keepReservation).map((w) => w.claim.claimRef),
      job.id,
    );
    for (const work of failed) work.emit(work.outcome as ClaimOutcome);
    const answered = new Set<string>();
    return claims.map((claim) => {
      const outcome = (unique.get(claim.claimRef) as Work).outcome as ClaimOutcome;
      const first = !answered.has(claim.claimRef);
      answered.add(claim.claimRef);
      return first ? outcome : replayOf(outcome);
    });
  }

  /** One placement round for the claims still pending: choose a node each, write the choices ahead, ask the nodes. */
  async #attempt(job: BatchJobHandle, pending: readonly Work[], round: PlacementRound): Promise<void> {
    const asks: Array<{ work: Work; tried: TriedNode }> = [];
    for (const work of pending) {
      const choice = work.asked >= this.#maxAttempts ? undefined : round.choose(new Set(work.tried.map((t) => t.node)));
      if (choice === undefined) {
        this.#failFromRefusal(work);
        continue;
      }
      const tried: TriedNode = {
        node: choice.node.name,
        address: choice.node.address,
        tier: choice.tier,
        at: Date.now(),
      };
      work.tried.push(tried);
      work.asked++;
      asks.push({ work, tried });
    }
    if (asks.length === 0) return;
    await this.#writeAhead(
      job,
      asks.map((a) => a.work),
    );
    await Promise.all(asks.map(({ work, tried }) => this.#claimOn(job.data, work, tried, round)));
  }

  async #claimOn(data: BatchJob, work: Work, tried: TriedNode, round: PlacementRound): Promise<void> {
    const answer = await this.#o.agents.claim(tried.address, data.key, work.claim.ttlSeconds, work.nodeRef);
    this.#o.metrics.nodeClaim(answer.ok ? 'served' : answer.refusal.kind);
    if (answer.ok) {
      this.#ownerAddrs.set(tried.node, answer.claim.owner_addr);
      await this.#served(work, grantOf(data, work.claim, tried, answer.claim));
      return;
    }
    work.lastRefusal = answer.refusal;
    if (answer.refusal.kind === 'refused') return;
    // Full, draining, or silent: no more claims of this batch go there.
    round.exclude(tried.node);
    // Silent: it may have served the claim. Ask before any other node is tried.
    if (answer.refusal.kind === 'unreachable') await this.#askTried(data, work, [tried]);
  }

  /**
   * Asks nodes a claim was sent to whether they hold it, and adopts what one
   * holds. A node that cannot be asked fails the claim Timeout and keeps its
   * reservation, so a retry with the same claimRef asks that node first.
   */
  async #askTried(data: BatchJob, work: Work, nodes: readonly TriedNode[]): Promise<void> {
    for (const tried of nodes) {
      if (work.outcome !== undefined) return;
      let served: ClaimRecord | undefined;
      try {
        let [first, ...extra] = await this.#o.agents.findByClaimRef(tried.address, work.nodeRef);
        // Asked by a run that died moments ago: its call may still be under way on the node. Look again once it cannot
        // be.
        const settledAt = tried.at + this.#o.nodeTimeoutMs + SETTLE_MARGIN_MS;
        if (first === undefined && Date.now() < settledAt) {
          await sleep(settledAt - Date.now());
          [first, ...extra] = await this.#o.agents.findByClaimRef(tried.address, work.nodeRef);
        }
        for (const row of extra) {
          this.#o.logger.error('a node holds one claim_ref twice: releasing the extra sandbox', {
            node: tried.node,
            claimRef: work.nodeRef,
            id: row.id,
          });
          await this.#o.agents.release(tried.address, row.id);
        }
        if (first === undefined) continue;
        const full = await this.#o.agents.get(tried.address, first.id);
        if (full?.token === undefined) continue;
        this.#o.metrics.adopted();
        const answer = {
          id: full.id,
          token: full.token,
          deadline: full.deadline,
          owner_addr: this.#ownerAddrs.get(tried.node) ?? '',
        };
        served = grantOf(data, work.claim, tried, answer);
      } catch (err) {
        this.#o.logger.warn('cannot ask a node whether it holds a claim: failing it Timeout, its reservation kept', {
          node: tried.node,
          claimRef: work.nodeRef,
          err,
        });
        work.keepReservation = true;
        this.#fail(
          work,
          'Timeout',
          `node ${tried.node} did not answer and may hold the claim; retry with the same claimRef`,
        );
        return;
      }
      if (served !== undefined) {
        await this.#served(work, served);
        return;
      }
    }
  }

  /** Another job holds the claimRef: wait for its answer, or take over when that job is gone. True when taken over. */
  async #waitForOther(job: BatchJobHandle, work: Work, reservation: Reservation, ttlMs: number): Promise<boolean> {
    const { namespace } = job.data;
    const ref = work.claim.claimRef;
    let current = reservation;
    let checkedAt = this.#now();
    for (;;) {
      if (this.#now() > job.data.deadline) {
        // Not ours: the other job keeps its reservation.
        work.keepReservation = true;
        this.#fail(work, 'Timeout', 'another request with the same claimRef is still being served');
        return false;
      }
      if (this.#now() - checkedAt >= ALIVE_CHECK_MS) {
        checkedAt = this.#now();
        if (
          !(await this.#o.jobAlive(current.job)) &&
          (await this.#o.index.takeOver(namespace, ref, current, job.id, ttlMs))
        ) {
          work.tried = [...current.tried];
          return true;
        }
      }
      await sleep(this.#pollMs);
      const value = await this.#o.index.peek(namespace, ref);
      if (value !== undefined && 'id' in value) {
        this.#answer(work, value);
        return false;
      }
      if (value !== undefined) {
        current = value;
        continue;
      }
      // The other job failed it and let go: reserve it for this one.
      const [again] = await this.#o.index.reserve(namespace, [ref], job.id, ttlMs);
      if (again?.state === 'new') return false;
      if (again?.state === 'served') {
        this.#answer(work, again.record);
        return false;
      }
      if (again?.state === 'busy') current = again.reservation;
    }
  }

  async #writeAhead(job: BatchJobHandle, works: readonly Work[]): Promise<void> {
    const progress: BatchProgress = { tried: { ...(job.progress?.tried ?? {}) } };
    for (const work of works) progress.tried[work.claim.claimRef] = work.tried;
    await Promise.all([
      this.#o.index.noteTried(
        job.data.namespace,
        works.map((w) => ({ claimRef: w.claim.claimRef, tried: w.tried })),
        job.id,
        reservationTtlMs(works),
      ),
      job.updateProgress(progress),
    ]);
  }

  /** Served here, under this job's reservation: recorded in the index first, then answered as fresh. */
  async #served(work: Work, grant: ClaimRecord): Promise<void> {
    if (work.outcome !== undefined) return;
    const outcome: ClaimOutcome = { ok: true, claimRef: work.claim.claimRef, grant, fresh: true };
    work.outcome = outcome;
    await this.#o.index.record([grant]);
    work.emit(outcome);
  }

  /** Served already (by an earlier job, or the one this waited for): answered as it is, a replay (not fresh). */
  #answer(work: Work, grant: ClaimRecord): void {
    if (work.outcome !== undefined) return;
    const outcome: ClaimOutcome = { ok: true, claimRef: work.claim.claimRef, grant };
    work.outcome = outcome;
    work.emit(outcome);
  }

  #failFromRefusal(work: Work): void {
    const refusal = work.lastRefusal;
    if (refusal === undefined)
      this.#fail(work, 'NoCapacity', 'no node has a warm sandbox of the pool or room to boot one', 1);
    else if (refusal.kind === 'full') this.#fail(work, 'NoCapacity', `every node asked is full: ${refusal.message}`, 1);
    else if (refusal.kind === 'refused')
      this.#fail(work, 'NodeRefused', `the node refused the claim: HTTP ${refusal.status}: ${refusal.message}`);
    else this.#fail(work, 'Timeout', `no node answered in time: ${refusal.message}`);
  }

  #fail(work: Work, reason: ClaimFailureReason, message: string, retryAfterSeconds?: number): void {
    if (work.outcome !== undefined) return;
    work.outcome = {
      ok: false,
      claimRef: work.claim.claimRef,
      reason,
      message,
      ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
    };
  }
}

/** The outcome as a claimRef's later positions in a job get it: one sandbox, fresh for its first caller only. */
export function replayOf(outcome: ClaimOutcome): ClaimOutcome {
  if (!outcome.ok || outcome.fresh === undefined) return outcome;
  const { fresh: _fresh, ...replay } = outcome;
  return replay;
}

function reservationTtlMs(works: readonly Work[]): number {
  let longest = 0;
  for (const work of works) longest = Math.max(longest, work.claim.ttlSeconds);
  return longest * 1000 + RESERVATION_GRACE_MS;
}

function union(a: readonly TriedNode[], b: readonly TriedNode[]): TriedNode[] {
  const out = [...a];
  for (const node of b) if (!out.some((n) => n.node === node.node)) out.push(node);
  return out;
}

function grantOf(
  data: BatchJob,
  claim: BatchClaim,
  tried: TriedNode,
  answer: { id: string; token: string; deadline: string; owner_addr: string },
): ClaimRecord {
  return {
    id: answer.id,
    token: answer.token,
    deadline: answer.deadline,
    ownerAddr: answer.owner_addr,
    node: tried.node,
    namespace: data.namespace,
    warmPool: data.warmPool,
    claimRef: claim.claimRef,
    tier: tried.tier,
    path: claim.path,
  };
}
