// One claim of a batch job as the BatchClaimer works on it, and the pure
// helpers around it: its node claim_ref, its outcome, its reservation's
// lifetime, the progress a job records.
import {
  formatNodeClaimRef,
  type BatchClaim,
  type BatchJob,
  type BatchProgress,
  type ClaimFailureReason,
  type ClaimOutcome,
  type ClaimRecord,
  type TriedNode,
} from '@warmpool/api';
import type { Refusal } from '../agents/answers.js';
import type { ReserveEntry } from './claim-index-values.js';
import type { ClaimScope } from './claim-service.js';

/** A reservation outlives the longest lease of its batch by this much. */
const RESERVATION_GRACE_MS = 30_000;

/** Where one claim of the batch stands. */
export interface Work {
  readonly claim: BatchClaim;
  readonly scope: ClaimScope;
  /** What the node records (see libs/api node-claim-ref). */
  readonly nodeRef: string;
  /** Every node asked for it, by any run of any job (never asked again: they refused or were checked). */
  tried: TriedNode[];
  /** Nodes asked by this run. */
  asked: number;
  outcome: ClaimOutcome | undefined;
  lastRefusal: Refusal | undefined;
  /** Keep the reservation when failing: a node may hold the claim and could not be asked. */
  keepReservation: boolean;
  /** Looked for on every node while the index recovered (see #findOnNodes). */
  scanned: boolean;
}

/** The outcome as a claimRef's later positions in a job get it: one sandbox, fresh for its first caller only. */
export function replayOf(outcome: ClaimOutcome): ClaimOutcome {
  if (!outcome.ok || outcome.fresh === undefined) return outcome;
  const { fresh: _fresh, ...replay } = outcome;
  return replay;
}

export interface Plan {
  tried: TriedNode[];
  ask: TriedNode | undefined;
}

export function entryOf(work: Work): ReserveEntry {
  return { scope: work.scope, claimRef: work.claim.claimRef };
}

export function scopedRefOf(scope: ClaimScope, claimRef: string): string {
  return `${scope.door}/${scope.peer ?? ''}/${scope.namespace}/${claimRef}`;
}

export function nodeRefOf(data: BatchJob, claim: BatchClaim): string {
  const { namespace, warmPool: pool } = data;
  switch (claim.door) {
    case 'crd':
      return formatNodeClaimRef({ door: 'crd', namespace, name: claim.claimRef, uid: claim.owner });
    case 'http':
      return formatNodeClaimRef({ door: 'http', namespace, claimRef: claim.claimRef, pool, owner: claim.owner });
    case 'fed':
      return formatNodeClaimRef({ door: 'fed', peer: claim.owner, namespace, claimRef: claim.claimRef, pool });
  }
}

export function progressOf(
  job: { readonly progress: BatchProgress | undefined },
  works: readonly Work[],
  triedOf: (i: number) => TriedNode[],
): BatchProgress {
  const progress: BatchProgress = { tried: { ...(job.progress?.tried ?? {}) } };
  works.forEach((work, i) => {
    const tried = triedOf(i);
    if (tried.length > 0) progress.tried[work.claim.claimRef] = tried;
  });
  return progress;
}

export function failFromRefusal(work: Work): void {
  const refusal = work.lastRefusal;
  if (refusal === undefined) fail(work, 'NoCapacity', 'no node has a warm sandbox of the pool or room to boot one', 1);
  else if (refusal.kind === 'full') fail(work, 'NoCapacity', `every node asked is full: ${refusal.message}`, 1);
  else if (refusal.kind === 'redirected')
    fail(work, 'NoCapacity', `no node asked could serve the claim itself: ${refusal.message}`, 1);
  else if (refusal.kind === 'refused')
    fail(work, 'NodeRefused', `the node refused the claim: HTTP ${refusal.status}: ${refusal.message}`);
  else fail(work, 'Timeout', `no node answered in time: ${refusal.message}`);
}

export function fail(work: Work, reason: ClaimFailureReason, message: string, retryAfterSeconds?: number): void {
  if (work.outcome !== undefined) return;
  work.outcome = {
    ok: false,
    claimRef: work.claim.claimRef,
    reason,
    message,
    ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
  };
}

export function reservationTtlMs(works: readonly Work[]): number {
  let longest = 0;
  for (const work of works) longest = Math.max(longest, work.claim.ttlSeconds);
  return longest * 1000 + RESERVATION_GRACE_MS;
}

export function union(a: readonly TriedNode[], b: readonly TriedNode[]): TriedNode[] {
  const out = [...a];
  for (const node of b) if (!out.some((n) => n.node === node.node)) out.push(node);
  return out;
}

export function grantOf(
  data: BatchJob,
  work: Work,
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
    claimRef: work.claim.claimRef,
    tier: tried.tier,
    key: data.key,
    door: work.claim.door,
    owner: work.claim.owner,
    ...(work.scope.peer !== undefined ? { peer: work.scope.peer } : {}),
  };
}

/** The batch's claims, one Work per claimRef (a claimRef twice in a job is one claim, answered twice). */
export function worksOf(data: BatchJob): Work[] {
  const unique = new Map<string, Work>();
  for (const claim of data.claims) {
    if (unique.has(claim.claimRef)) continue;
    const scope: ClaimScope = {
      namespace: data.namespace,
      door: claim.door,
      ...(claim.door === 'fed' ? { peer: claim.owner } : {}),
    };
    unique.set(claim.claimRef, {
      claim,
      scope,
      nodeRef: nodeRefOf(data, claim),
      tried: [],
      asked: 0,
      outcome: undefined,
      lastRefusal: undefined,
      keepReservation: false,
      scanned: false,
    });
  }
  return [...unique.values()];
}
