// How long a SandboxClaim's sandbox lives. The node reaps every sandbox at
// its deadline, so the controller holds a lease and renews it:
// - without spec.lifecycle.shutdownTime the sandbox lives as long as the
//   claim: a lease of `leaseSeconds`, renewed when half of it is left;
// - with it, the deadline is the shutdownTime itself (in steps of at most the
//   node's 24 h cap), after which the node reaps the sandbox and the claim
//   turns Ready=False Expired. A shutdownTime moved later or earlier moves the
//   deadline at the next reconcile.
import { MAX_CLAIM_TTL_SECONDS, type SandboxClaim } from '@warmpool/api';

/** Deadlines this close to the shutdownTime count as equal (the node grants whole seconds). */
const SAME_DEADLINE_MS = 1_500;

/** spec.lifecycle.shutdownTime in ms since the epoch; undefined when absent or unreadable. */
export function shutdownAt(claim: SandboxClaim): number | undefined {
  const raw = claim.spec?.lifecycle?.shutdownTime;
  if (raw === undefined || raw === '') return undefined;
  const ms = Date.parse(raw);
  return Number.isNaN(ms) ? undefined : ms;
}

export function isExpired(shutdown: number | undefined, now: number): boolean {
  return shutdown !== undefined && now >= shutdown;
}

/** The TTL to claim or renew with now: at least 1 s, at most the node's cap. */
export function ttlSecondsFor(shutdown: number | undefined, now: number, leaseSeconds: number): number {
  if (shutdown === undefined) return Math.min(leaseSeconds, MAX_CLAIM_TTL_SECONDS);
  return Math.max(1, Math.min(Math.ceil((shutdown - now) / 1000), MAX_CLAIM_TTL_SECONDS));
}

/**
 * When the lease of a sandbox with `deadline` must be renewed (ms since the
 * epoch; at or before `now` means at once), or undefined when it never needs
 * renewing because the deadline already is the shutdownTime.
 */
export function renewalAt(
  deadline: number,
  shutdown: number | undefined,
  now: number,
  leaseSeconds: number,
): number | undefined {
  if (shutdown === undefined) return deadline - (leaseSeconds * 1000) / 2;
  if (Math.abs(deadline - shutdown) <= SAME_DEADLINE_MS) return undefined;
  // The shutdownTime moved, or lies beyond the node's cap.
  if (shutdown - now <= MAX_CLAIM_TTL_SECONDS * 1000) return now;
  return deadline - (MAX_CLAIM_TTL_SECONDS * 1000) / 2;
}
