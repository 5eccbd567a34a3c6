// What the claim API's routes share: its Hono environment, the error body
// every refusal answers (with the status of ../failures.ts), the claim body,
// and whose key space a request reads and writes.
import { ownerDigest, type ClaimBody, type ClaimErrorBody, type ClaimFailureReason } from '@warmpool/api';
import { ReviewUnavailable, type UserInfo } from '@warmpool/kube';
import type { Logger } from '@warmpool/runtime';
import type { Context } from 'hono';
import { ClaimFailure, type ClaimGrant, type ClaimOwner, type ClaimScope } from '../../provisioning/claim-service.js';
import { FAILURE_STATUS, retryAfterOf } from '../failures.js';

/**
 * `user`: the reviewed caller (a peer's is its peerUsername); `peer`: the id of the peer cluster whose token the
 * request bears, undefined for any other caller; `namespace`: the path's, once authorized.
 */
export type ClaimApiEnv = { Variables: { user: UserInfo; namespace: string; peer: string | undefined } };

/** A sandbox id (`sb_…`) or a claimRef. */
const CLAIM_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Who calls: a peer cluster (its id, and its peerUsername as the user), or a caller the apiserver reviewed. */
export interface Caller {
  user: UserInfo;
  peer: string | undefined;
}

/** A request refused before it is served: the reason and words its error body carries. */
export interface Refusal {
  refused: ClaimFailureReason;
  error: string;
}

export function isRefusal(value: object): value is Refusal {
  return 'refused' in value;
}

/** A failure's answer: its status, headers (Retry-After, WWW-Authenticate) and error body. */
export interface FailureReply {
  status: (typeof FAILURE_STATUS)[ClaimFailureReason];
  headers: Record<string, string>;
  body: ClaimErrorBody;
}

export function failureReply(reason: ClaimFailureReason, error: string, retryAfterSeconds?: number): FailureReply {
  const status = FAILURE_STATUS[reason];
  const headers: Record<string, string> = {};
  const retryAfter = retryAfterOf(reason, retryAfterSeconds);
  if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
  if (status === 401) headers['www-authenticate'] = 'Bearer';
  return { status, headers, body: { error, reason } };
}

/**
 * What an error thrown while serving `request` answers: a ClaimFailure its reason, an apiserver that could not review
 * the request 503; anything else is unexpected (logged with the request) and answers 503 without its details.
 */
export function errorReply(err: unknown, logger: Logger, request: { method: string; path: string }): FailureReply {
  if (err instanceof ClaimFailure) return failureReply(err.reason, err.message, err.retryAfterSeconds);
  if (err instanceof ReviewUnavailable) return failureReply('Unavailable', err.message, 1);
  logger.error('claim API request failed', { ...request, err });
  return failureReply('Unavailable', 'internal error', 1);
}

export function fail(c: Context, reason: ClaimFailureReason, error: string, retryAfterSeconds?: number): Response {
  const { status, headers, body } = failureReply(reason, error, retryAfterSeconds);
  return c.json<ClaimErrorBody>(body, status, headers);
}

/** The path's claim id, or undefined when it is neither a sandbox id nor a claimRef. */
export function claimId(c: Context): string | undefined {
  const id = c.req.param('id') ?? '';
  return CLAIM_ID.test(id) ? id : undefined;
}

export function bodyOf(grant: ClaimGrant, withToken: boolean): ClaimBody {
  const body: ClaimBody = {
    id: grant.id,
    deadline: grant.deadline,
    ownerAddr: grant.ownerAddr,
    node: grant.node,
    namespace: grant.namespace,
    warmPool: grant.warmPool,
    claimRef: grant.claimRef,
    tier: grant.tier,
  };
  if (grant.cluster !== undefined) body.cluster = grant.cluster;
  if (withToken) body.token = grant.token;
  return body;
}

/** The caller an authorized request's context holds. */
export function callerOf(c: Context<ClaimApiEnv>): Caller {
  return { user: c.get('user'), peer: c.get('peer') };
}

/** Each front door is its own key space: a peer sees only the claims it made, an HTTP caller never a SandboxClaim's. */
export function scopeOf(c: Context<ClaimApiEnv>): ClaimScope {
  return callerScope(callerOf(c), c.get('namespace'));
}

export function callerScope({ peer }: Caller, namespace: string): ClaimScope {
  return peer !== undefined ? { namespace, door: 'fed', peer } : { namespace, door: 'http' };
}

/** Who claims: a peer, or the reviewed identity together with what it asked for (a replay must match both). */
export function ownerOf({ user, peer }: Caller, asked: string): ClaimOwner {
  if (peer !== undefined) return { door: 'fed', peer };
  return { door: 'http', digest: digestOf(user, asked) };
}

/**
 * Each reviewed identity's owner digests, computed once per identity object: a cached review hands out the same
 * object for every request of that token while the review holds.
 */
const digests = new WeakMap<UserInfo, Map<string, string>>();

function digestOf(user: UserInfo, asked: string): string {
  let byAsked = digests.get(user);
  if (byAsked === undefined) {
    byAsked = new Map();
    digests.set(user, byAsked);
  }
  let digest = byAsked.get(asked);
  if (digest === undefined) {
    digest = ownerDigest(user, asked);
    byAsked.set(asked, digest);
  }
  return digest;
}
