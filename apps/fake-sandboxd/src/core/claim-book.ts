// The node's live claims: by id, by claim_ref, and by deadline (one timer for
// all of them, deadline-timer.ts). A claim is in all three or in none; its
// end (released or reaped) is told to every listener.
import type { PoolKey, SandboxdRow } from '@warmpool/api';
import type { TimerClock } from '@warmpool/runtime';
import { DeadlineTimer } from './deadline-timer.js';
import { newSandboxId, newSandboxToken } from './ids.js';

/** A live claim. */
export interface Claim {
  readonly id: string;
  readonly token: string;
  readonly key: PoolKey;
  readonly claimedAt: number;
  readonly claimRef: string | undefined;
  /** The tenant whose token claimed it; undefined for root. */
  readonly tenant: string | undefined;
  /** Epoch ms when the node reaps it. */
  deadline: number;
  heapIndex: number;
}

export interface ClaimBookOptions {
  clock: TimerClock;
  /** Called for each claim reaped at its deadline (after it is forgotten). */
  reaped: (claim: Claim) => void;
  /** Called once after each batch of reaps. */
  afterReaps: () => void;
}

/** Who a new claim is for. */
export interface ClaimOwner {
  claimRef: string | undefined;
  tenant: string | undefined;
}

export class ClaimBook {
  readonly #clock: TimerClock;
  readonly #byId = new Map<string, Claim>();
  readonly #byRef = new Map<string, Set<Claim>>();
  readonly #deadlines: DeadlineTimer<Claim>;
  readonly #goneListeners = new Set<(id: string) => void>();

  constructor(options: ClaimBookOptions) {
    this.#clock = options.clock;
    const reaped = options.reaped;
    this.#deadlines = new DeadlineTimer<Claim>(
      options.clock,
      (claim) => {
        this.forget(claim);
        reaped(claim);
      },
      options.afterReaps,
    );
  }

  get size(): number {
    return this.#byId.size;
  }

  get(id: string): Claim | undefined {
    return this.#byId.get(id);
  }

  /** Live claims in claim order; with `claimRef`, only those recorded under exactly that ref. */
  claims(claimRef?: string): Iterable<Claim> {
    return claimRef === undefined ? this.#byId.values() : (this.#byRef.get(claimRef)?.values() ?? []);
  }

  /** A new claim of `key`, leased for `ttlSeconds` from now. */
  grant(key: PoolKey, ttlSeconds: number, owner: ClaimOwner): Claim {
    const now = this.#clock.now();
    const claim: Claim = {
      id: newSandboxId(),
      token: newSandboxToken(),
      key,
      claimedAt: now,
      claimRef: owner.claimRef,
      tenant: owner.tenant,
      deadline: now + ttlSeconds * 1000,
      heapIndex: -1,
    };
    this.#byId.set(claim.id, claim);
    if (claim.claimRef !== undefined) {
      let set = this.#byRef.get(claim.claimRef);
      if (set === undefined) this.#byRef.set(claim.claimRef, (set = new Set()));
      set.add(claim);
    }
    this.#deadlines.add(claim);
    return claim;
  }

  /** Resets a claim's lease to `ttlSeconds` from now. */
  renew(claim: Claim, ttlSeconds: number): void {
    claim.deadline = this.#clock.now() + ttlSeconds * 1000;
    this.#deadlines.update(claim);
  }

  /** The claim ends: out of every index, and every listener told. */
  forget(claim: Claim): void {
    this.#byId.delete(claim.id);
    for (const listener of this.#goneListeners) listener(claim.id);
    this.#deadlines.remove(claim);
    if (claim.claimRef !== undefined) {
      const set = this.#byRef.get(claim.claimRef);
      set?.delete(claim);
      if (set?.size === 0) this.#byRef.delete(claim.claimRef);
    }
  }

  /** Calls `listener` with the id of every claim that ends; the returned function unsubscribes. */
  onGone(listener: (id: string) => void): () => void {
    this.#goneListeners.add(listener);
    return () => this.#goneListeners.delete(listener);
  }

  /** Stops the deadline timer; the claims stay readable. */
  close(): void {
    this.#deadlines.close();
  }
}

/** The wire row of a claim; the token only when asked (callers with the configured root token). */
export function claimRow(claim: Readonly<Claim>, options: { omitClaimedAt: boolean; withToken: boolean }): SandboxdRow {
  const row: SandboxdRow = {
    id: claim.id,
    key: { ...claim.key },
    deadline: new Date(claim.deadline).toISOString(),
    hibernated: false,
  };
  if (!options.omitClaimedAt) row.claimed_at = new Date(claim.claimedAt).toISOString();
  if (claim.claimRef !== undefined) row.claim_ref = claim.claimRef;
  if (claim.tenant !== undefined) row.tenant = claim.tenant;
  if (options.withToken) row.token = claim.token;
  return row;
}
