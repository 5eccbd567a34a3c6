// A SandboxClaim's status as warmpool writes it: the Ready condition (True /
// Claimed, or False with the reason a claim failed, libs/api's
// CLAIM_FAILURE_REASONS) and status.sandbox. Pure, so every transition is
// tested without an apiserver.
import type { ClaimFailureReason, Condition, SandboxClaim } from '@warmpool/api';
import { statusReplacementOf } from '@warmpool/kube';
import { transitionTimeOf } from '../conditions.js';
import type { ClaimGrant } from '../../provisioning/claim-service.js';

export const READY = 'Ready';
export const CLAIMED = 'Claimed';
export type ReadyReason = typeof CLAIMED | ClaimFailureReason;

/** The status a claim should have now; `sandbox: null` clears a stale one. */
export interface ClaimStatusPatch {
  conditions: Condition[];
  sandbox: { name: string; podIPs: string[] } | null;
}

/** Failures that may clear up by themselves: the claim is tried again with backoff. */
const RETRYABLE: ReadonlySet<ClaimFailureReason> = new Set<ClaimFailureReason>([
  'NoCapacity',
  'NodeRefused',
  'Unavailable',
  'Timeout',
]);

export function isRetryable(reason: ClaimFailureReason): boolean {
  return RETRYABLE.has(reason);
}

/** The IP of a `host:port` or `[v6]:port` owner address (what status.sandbox.podIPs carries). */
export function ipOf(ownerAddr: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(ownerAddr);
  if (bracketed?.[1] !== undefined) return bracketed[1];
  const colon = ownerAddr.lastIndexOf(':');
  // A bare IPv6 address has several colons and no port to strip.
  if (colon < 0 || ownerAddr.indexOf(':') !== colon) return ownerAddr;
  return ownerAddr.slice(0, colon);
}

export function readyOf(claim: SandboxClaim): Condition | undefined {
  return claim.status?.conditions?.find((c) => c.type === READY);
}

function withReady(
  claim: SandboxClaim,
  status: 'True' | 'False',
  reason: ReadyReason,
  message: string,
  now: number,
): Condition[] {
  const previous = readyOf(claim);
  const ready: Condition = {
    type: READY,
    status,
    reason,
    message: message.slice(0, 32_768),
    lastTransitionTime: transitionTimeOf(previous, status, now),
    ...(claim.metadata.generation !== undefined ? { observedGeneration: claim.metadata.generation } : {}),
  };
  const others = (claim.status?.conditions ?? []).filter((c) => c.type !== READY);
  return [...others, ready];
}

export function claimedStatus(claim: SandboxClaim, grant: ClaimGrant, now: number): ClaimStatusPatch {
  const message = `sandbox ${grant.id} on node ${grant.node} (${grant.tier}) until ${grant.deadline}`;
  return {
    conditions: withReady(claim, 'True', CLAIMED, message, now),
    sandbox: { name: claim.metadata.name ?? '', podIPs: [ipOf(grant.ownerAddr)] },
  };
}

/** Ready=False; a served claim keeps status.sandbox unless the sandbox is gone (`keepSandbox` false). */
export function failedStatus(
  claim: SandboxClaim,
  reason: ClaimFailureReason,
  message: string,
  now: number,
  keepSandbox = false,
): ClaimStatusPatch {
  const sandbox = claim.status?.sandbox;
  return {
    conditions: withReady(claim, 'False', reason, message, now),
    sandbox: keepSandbox && sandbox?.name !== undefined ? { name: sandbox.name, podIPs: sandbox.podIPs ?? [] } : null,
  };
}

/** Whether writing `next` would change what the claim shows (the transition time alone is no change). */
export function statusDiffers(claim: SandboxClaim, next: ClaimStatusPatch): boolean {
  const current = readyOf(claim);
  const ready = next.conditions.find((c) => c.type === READY);
  if (current?.status !== ready?.status || current?.reason !== ready?.reason || current?.message !== ready?.message)
    return true;
  if (current?.observedGeneration !== ready?.observedGeneration) return true;
  const have = claim.status?.sandbox;
  const want = next.sandbox;
  if (want === null)
    return have !== undefined && have !== null && (have.name !== undefined || (have.podIPs?.length ?? 0) > 0);
  return have?.name !== want.name || JSON.stringify(have.podIPs ?? []) !== JSON.stringify(want.podIPs);
}

/**
 * What a PUT on the status subresource takes to write `next` onto `claim` as it is at its resourceVersion: the whole
 * status (the rest of what the claim shows kept, `sandbox: null` dropping it) pinned to the claim's uid and that
 * version (statusReplacementOf), so a namesake is refused even if a resourceVersion were reused (an etcd restored from
 * a backup).
 */
export function statusReplacement(claim: SandboxClaim, next: ClaimStatusPatch): SandboxClaim {
  const { sandbox, ...rest } = claim.status ?? {};
  return statusReplacementOf(claim, {
    ...rest,
    conditions: next.conditions,
    ...(next.sandbox === null ? {} : { sandbox: { ...sandbox, ...next.sandbox } }),
  });
}

export function isReadyClaimed(claim: SandboxClaim): boolean {
  const ready = readyOf(claim);
  return ready?.status === 'True' && ready.reason === CLAIMED;
}
