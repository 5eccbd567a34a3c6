// The seam between the claim front doors (the HTTP claim API and the
// SandboxClaim controller) and the provisioning pipeline behind them
// (Controller → Provisioner → Batcher → one BullMQ job per batch → node
// agents, exactly once, with the claim index in Redis).
//
// Invariants every implementation keeps:
// - A claim is identified by (namespace, claimRef); the node sees the
//   claim_ref `<namespace>/<claimRef>`. Claiming the same pair again while its
//   sandbox lives answers the same grant, never a second sandbox.
// - A failed claim leaves nothing claimed on any node.
// - release() and renew() work from any replica: they resolve the claim
//   through the shared index, not through local memory.
import type { ClaimFailureReason } from '@warmpool/api';

export type ClaimPath = 'http' | 'crd';
export type ClaimTier = 'warm' | 'cold';

export interface ClaimOrder {
  namespace: string;
  /** The SandboxWarmPool to claim from. */
  warmPool: string;
  /** A DNS label; the idempotency key within the namespace. */
  claimRef: string;
  /** Already defaulted and bounded by the front door (300 s default, at most 86 400). */
  ttlSeconds: number;
  path: ClaimPath;
  /**
   * True when the front door generated claimRef (the client sent none): a
   * sandbox served after the caller gave up is released, since nobody can come
   * back for it. Absent = a client-chosen ref, kept for the client's retry.
   */
  claimRefGenerated?: boolean;
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
  /**
   * The front door that claimed it, as the index records it. The claim
   * janitor releases orphans of the 'crd' path only and never touches a
   * grant whose path is 'http' or unknown.
   */
  path?: ClaimPath;
  /** Set when a peer cluster serves it (a spilled Env claim). */
  cluster?: string;
}

/** What claim() answers: the grant, and whether this very call had it served. */
export interface ServedGrant extends ClaimGrant {
  /**
   * True when this call's order had the sandbox claimed; absent when the
   * claimRef was served before (or meanwhile, for another call) and this call
   * got that sandbox again. Decided by the claimRef's reservation in the claim
   * index, so it holds across replicas: of calls racing with one claimRef,
   * only the one whose reservation served it is fresh. Absent whenever that
   * is not known (a job run again after serving it), never true for a sandbox
   * served for another call. Never stored in the index.
   */
  fresh?: true;
}

export interface ClaimCallOptions {
  /** The caller gave up: an unanswered claim is released when it lands (see claim()). */
  signal?: AbortSignal;
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
   * signal aborts before the answer: an order without a client-chosen claimRef
   * (the HTTP API generated it) has its sandbox released once served; one with
   * a client claimRef keeps it for the client's retry until its TTL.
   */
  claim(order: ClaimOrder, options?: ClaimCallOptions): Promise<ServedGrant>;
  /** The live claim by its sandbox id or its claimRef, from the shared index; undefined when none. */
  lookup(namespace: string, idOrClaimRef: string): Promise<ClaimGrant | undefined>;
  /** Renews on its node; answers the granted deadline. Rejects ClaimFailure('ClaimNotFound') when gone. */
  renew(namespace: string, idOrClaimRef: string, ttlSeconds: number): Promise<{ deadline: string }>;
  /** Releases on its node and drops it from the index; false when there was nothing to release. */
  release(namespace: string, idOrClaimRef: string): Promise<boolean>;
  /** Ready to take claims (Redis reachable, caches synced); the reasons it is not. */
  notReadyReasons(): string[];
  close(): Promise<void>;
}
