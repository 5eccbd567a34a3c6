// Asks nodes whether they hold a claim (by its node claim_ref) and adopts
// what one holds, so a claim that may already be served is never sent again.
// A node asked less than its call timeout ago (or before its TriedNode
// `until`) may still be serving it: it is asked again until then, or until
// the caller gives up (Timeout, reservation kept). A node that cannot be
// asked fails the claim with its reservation kept, so a retry asks it first.
import { claimNameOf, parseNodeClaimRef, type TolerantSandboxRow, type TriedNode } from '@warmpool/api';
import { sleep } from '@warmpool/kube';
import { fail, grantOf, scopedRefOf, type Work } from './batch-work.js';
import { scopeOfNodeClaim } from './claim-index-values.js';
import { SETTLE_MARGIN_MS, type BatchJobHandle, type ClaimerSettings, type Emit } from './claimer-settings.js';
import type { GrantRecorder } from './grant-recorder.js';

/** How often a node that may still serve a claim is asked for it meanwhile. */
const LOOKUP_POLL_MS = 250;

export class NodeLookup {
  readonly #settings: ClaimerSettings;
  readonly #recorder: GrantRecorder;

  constructor(settings: ClaimerSettings, recorder: GrantRecorder) {
    this.#settings = settings;
    this.#recorder = recorder;
  }

  /** Asks the nodes a claim was sent to whether they hold it, and adopts what one holds. */
  async askTried(
    job: BatchJobHandle,
    work: Work,
    nodes: readonly TriedNode[],
    emit: Emit,
    sentByThisJob = true,
  ): Promise<void> {
    for (const tried of nodes) {
      if (work.outcome !== undefined) return;
      try {
        const rows = await this.#rowsOnceSettled(job, work, tried);
        if (rows === undefined) return;
        if (await this.adopt(job, work, tried, rows, emit, sentByThisJob)) return;
      } catch (err) {
        this.#settings.logger.warn(
          'cannot ask a node whether it holds a claim: failing it Timeout, its reservation kept',
          { node: tried.node, claimRef: work.nodeRef, err },
        );
        work.keepReservation = true;
        fail(work, 'Timeout', `node ${tried.node} did not answer and may hold the claim; retry with the same claimRef`);
        return;
      }
    }
  }

  /**
   * The node's rows for the claim, asked again while its call may still be under way there (a run that died moments
   * ago, or a timed-out call the node still boots); undefined when the caller gave up first (failed Timeout).
   */
  async #rowsOnceSettled(job: BatchJobHandle, work: Work, tried: TriedNode): Promise<TolerantSandboxRow[] | undefined> {
    let rows = await this.#rowsOf(tried.address, work.nodeRef);
    const settledAt = (tried.until ?? tried.at + this.#settings.nodeTimeoutMs) + SETTLE_MARGIN_MS;
    while (rows.length === 0 && Date.now() < settledAt) {
      if (this.#settings.now() > job.data.deadline) {
        work.keepReservation = true;
        fail(
          work,
          'Timeout',
          `node ${tried.node} may still serve the claim (a slow or cold claim); retry with the same claimRef`,
          1,
        );
        return undefined;
      }
      await sleep(Math.min(LOOKUP_POLL_MS, Math.max(0, settledAt - Date.now())));
      rows = await this.#rowsOf(tried.address, work.nodeRef);
    }
    return rows;
  }

  /** The node's rows under exactly this claim_ref, filtered here: an older sandboxd ignores the filter. */
  async #rowsOf(address: string, nodeRef: string): Promise<TolerantSandboxRow[]> {
    return (await this.#settings.agents.findByClaimRef(address, nodeRef)).filter((row) => row.claim_ref === nodeRef);
  }

  /**
   * Takes over the first of a node's rows for this claim (an extra one is released); false when there is none.
   * `sentByThisJob`: the node claim was this job's own (any run of it), so the adopted sandbox is fresh for its callers.
   */
  async adopt(
    job: BatchJobHandle,
    work: Work,
    tried: TriedNode,
    rows: readonly TolerantSandboxRow[],
    emit: Emit,
    sentByThisJob = false,
  ): Promise<boolean> {
    const { agents, logger, metrics } = this.#settings;
    const [first, ...extra] = rows;
    for (const row of extra) {
      logger.error('a node holds one claim_ref twice: releasing the extra sandbox', {
        node: tried.node,
        claimRef: work.nodeRef,
        id: row.id,
      });
      await agents.release(tried.address, row.id);
    }
    if (first === undefined) return false;
    const full = await agents.get(tried.address, first.id);
    if (full?.token === undefined) return false;
    metrics.adopted();
    const answer = {
      id: full.id,
      token: full.token,
      deadline: full.deadline,
      owner_addr: this.#recorder.ownerAddrOf(tried.node),
    };
    await this.#recorder.served(job, work, grantOf(job.data, work, tried, answer), tried, emit, sentByThisJob);
    return true;
  }

  /**
   * The index may have lost entries: before any fresh claim is sent, every
   * node is asked (one list each) whether it already holds one of them, once
   * no node call from before the loss can still be under way.
   */
  async findOnNodes(job: BatchJobHandle, fresh: readonly Work[], since: number, emit: Emit): Promise<void> {
    for (const work of fresh) work.scanned = true;
    const settledAt = since + this.#settings.nodeTimeoutMs + SETTLE_MARGIN_MS;
    if (Date.now() < settledAt) await sleep(settledAt - Date.now());
    const byScopedRef = new Map(fresh.map((work) => [scopedRefOf(work.scope, work.claim.claimRef), work]));
    await Promise.all(this.#settings.nodes().map((agent) => this.#findOnNode(job, agent, fresh, byScopedRef, emit)));
  }

  async #findOnNode(
    job: BatchJobHandle,
    agent: { node: string; address: string },
    fresh: readonly Work[],
    byScopedRef: ReadonlyMap<string, Work>,
    emit: Emit,
  ): Promise<void> {
    let rows: TolerantSandboxRow[];
    try {
      rows = await this.#settings.agents.list(agent.address);
    } catch (err) {
      // It may hold any of them: none of this batch's fresh claims may be sent anywhere else.
      this.#settings.logger.warn('index recovery: a node could not be listed; its claims cannot be ruled out', {
        node: agent.node,
        err,
      });
      for (const work of fresh) {
        work.keepReservation = true;
        fail(work, 'Unavailable', `recovering the claim index: node ${agent.node} did not answer`, 1);
      }
      return;
    }
    const tried: TriedNode = { node: agent.node, address: agent.address, at: 0, tier: 'warm' };
    for (const row of rows) {
      const owner = parseNodeClaimRef(row.claim_ref);
      if (owner === undefined || owner.namespace !== job.data.namespace) continue;
      const work = byScopedRef.get(scopedRefOf(scopeOfNodeClaim(owner), claimNameOf(owner).name));
      if (work === undefined || work.outcome !== undefined) continue;
      if (row.claim_ref !== work.nodeRef) {
        fail(work, 'ClaimRefInUse', `claimRef ${work.claim.claimRef} is held by another owner`);
        continue;
      }
      await this.adopt(job, work, tried, [row], emit);
    }
  }
}
