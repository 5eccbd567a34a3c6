// What a failure answers over HTTP, one status per reason for every front
// door: the claim API sends the reason itself (`{error, reason}`), the Sandbox
// API a Kubernetes Status with that status code and the reason among its
// causes. Invariant: a caller's retry rule (retry 5xx and, when it may wait,
// 429; never another 4xx) reads the same from either door.
import type { ClaimFailureReason } from '@warmpool/api';
import type { ContentfulStatusCode } from 'hono/utils/http-status';

export const FAILURE_STATUS = {
  BadRequest: 400,
  Unauthenticated: 401,
  Forbidden: 403,
  // A pool, Env or claim named by the request that does not exist (or is not warmpool's to claim from).
  PoolNotFound: 404,
  EnvNotFound: 404,
  NotDriven: 404,
  ClaimNotFound: 404,
  Expired: 404,
  NotFound: 404,
  MethodNotAllowed: 405,
  // The claimRef (a Sandbox's name) is live for another owner.
  ClaimRefInUse: 409,
  NoCapacity: 429,
  // The nodes answered, and refused: a gateway's upstream error, retried with the same claimRef.
  NodeRefused: 502,
  Unavailable: 503,
  Timeout: 504,
} as const satisfies Record<ClaimFailureReason, ContentfulStatusCode>;

/**
 * The Retry-After (seconds, at least 1) a failure answers with: on 429 and 503 only, 1 s unless the failure says when.
 */
export function retryAfterOf(reason: ClaimFailureReason, retryAfterSeconds: number | undefined): number | undefined {
  const status = FAILURE_STATUS[reason];
  if (status !== 429 && status !== 503) return undefined;
  return Math.max(1, Math.ceil(retryAfterSeconds ?? 1));
}
