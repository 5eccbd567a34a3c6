// The seam between the claim front doors (the HTTP claim API and the
// SandboxClaim controller) and the provisioning pipeline behind them
// (Controller → Provisioner → Batcher → one BullMQ job per batch → node
// agents, exactly once, with the claim index in Redis).
//
// Invariants every implementation keeps:
// - A claim is identified by (front door, namespace, claimRef); the node sees
//   a claim_ref naming all three and the owner (libs/api node-claim-ref), so
//   the node alone is enough to find it. Claiming the same again while its
//   sandbox lives answers the same grant to the same owner, never a second
//   sandbox; another owner is refused (ClaimRefInUse).
// - A failed claim leaves nothing claimed on any node.
// - release() and renew() work from any replica: they resolve the claim
//   through the shared index, not through local memory.
import type { ClaimDoor, ClaimFailureReason } from '@warmpool/api';
import type { CallerGone } from './caller-signal.js';

export type { ClaimDoor } from '@warmpool/api';
export type ClaimTier = 'warm' | 'cold';

export interface ClaimOrder {
  namespace: string;
  /** The SandboxWarmPool to claim from. */
  warmPool: string;
  /** A DNS label; the idempotency key within the namespace. */
  claimRef: string;
  /** Already defaulted and bounded by the front door (300 s default, at most 86 400). */
  ttlSeconds: number;
  /** Who claims, through which front door: written on the node (the claim_ref), so the node alone knows the owner. */
  owner: ClaimOwner;
  /**
   * True when the front door generated claimRef (the client sent none): a
   * sandbox served after the caller gave up is released, since nobody can come
   * back for it. Absent = a client-chosen ref, kept for the client's retry.
   */
  claimRefGenerated?: boolean;
}

/**
 * The owner of a claim. A replay of the same (door, namespace, claimRef) by
 * another owner is refused (ClaimRefInUse), never answered with the sandbox.
 */
export type ClaimOwner =
  /** A SandboxClaim: its uid (a re-created namesake is another owner). */
  | { door: 'crd'; uid: string }
  /** The HTTP claim API: ownerDigest(identity, `pool:<name>` or `env:<name>`) of libs/api. */
  | { door: 'http'; digest: string }
  /** A peer cluster that forwarded the claim (its configured id). */
  | { door: 'fed'; peer: string };

/** The owner's mark a batch claim and a record carry (see libs/api batchClaimSchema). */
export function ownerMark(owner: ClaimOwner): string {
  switch (owner.door) {
    case 'crd':
      return owner.uid;
    case 'http':
      return owner.digest;
    case 'fed':
      return owner.peer;
  }
}

/**
 * Where a claim is looked up: its namespace and front door (and, for a
 * peer's claims, the peer). Each door is its own key space, so no door can
 * read, renew or release another door's claims.
 */
export interface ClaimScope {
  namespace: string;
  door: ClaimDoor;
  /** With door 'fed': the peer whose claims these are. */
  peer?: string;
}

/** A served claim, as the index records it (the token is the sandbox's own bearer token). */
export interface ClaimGrant {
  id: string;
  token: string;
  /** RFC 3339. */
  deadline: string;
  ownerAddr: string;
  node: string;
  namespace: string;
  warmPool: string;
  claimRef: string;
  tier: ClaimTier;
  /** The front door that claimed it. */
  door: ClaimDoor;
  /** The owner's mark: the SandboxClaim's uid, the HTTP owner digest, or the peer id. */
  owner: string;
  /** With door 'fed': the peer that owns it. */
  peer?: string;
  /** Set when a peer cluster serves it (a spilled Env claim). */
  cluster?: string;
}

/** What claim() answers: the grant, and whether this very call had it served. */
export interface ServedGrant extends ClaimGrant {
  /**
   * True when this call's order had the sandbox claimed on a node; absent when
   * the claimRef was served before (or meanwhile, for another call), or when
   * that is not known (a claim found on a node rather than claimed). Decided by
   * the claimRef's reservation in the claim index, so it holds across
   * replicas: of calls racing with one claimRef, at most one is fresh. Never
   * stored in the index.
   */
  fresh?: true;
}

export interface LookupOptions {
  /**
   * Only the index, never the nodes: for a "was it served already?" check in front of a claim, which settles
   * exactly once itself (a miss that lists every node would cost each new claim a fleet-wide listing).
   */
  indexOnly?: boolean;
  /**
   * An index that cannot be reached throws instead of being passed over for the nodes: for a lookup worth only what
   * the index holds beyond the nodes (the Sandbox view's owner addresses and tiers), whose caller asks again later.
   */
  indexRequired?: boolean;
}

export interface ClaimCallOptions {
  /** The caller gave up: an unanswered claim is released when it lands (see claim()). */
  givenUp?: CallerGone;
}

/** A claim that could not be served; `reason` is what the front doors answer and write. */
export class ClaimFailure extends Error {
  override name = 'ClaimFailure';
  readonly reason: ClaimFailureReason;
  /** For NoCapacity / Unavailable: when trying again makes sense. */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    reason: ClaimFailureReason,
    message: string,
    options: { retryAfterSeconds?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

export interface ClaimService {
  /**
   * Serves the order (batched per pool). Rejects with ClaimFailure. When the
   * caller gives up before the answer: an order without a client-chosen claimRef
   * (the HTTP API generated it) has its sandbox released once served; one with
   * a client claimRef keeps it for the client's retry until its TTL.
   */
  claim(order: ClaimOrder, options?: ClaimCallOptions): Promise<ServedGrant>;
  /**
   * The live claim by its sandbox id or its claimRef within a scope: from the
   * shared index, else from the nodes (the source of truth; what they hold is
   * recorded again). Undefined when no node holds it.
   */
  lookup(scope: ClaimScope, idOrClaimRef: string, options?: LookupOptions): Promise<ClaimGrant | undefined>;
  /** Renews on its node; answers the granted deadline. Rejects ClaimFailure('ClaimNotFound') when gone. */
  renew(scope: ClaimScope, idOrClaimRef: string, ttlSeconds: number): Promise<{ deadline: string }>;
  /** Releases on its node and drops it from the index; false when there was nothing to release. */
  release(scope: ClaimScope, idOrClaimRef: string): Promise<boolean>;
  /** Ready to take claims (Redis reachable, caches synced); the reasons it is not. */
  notReadyReasons(): string[];
  close(): Promise<void>;
}
