// What the claim API's routes share: its Hono environment, the error body
// every refusal answers (with the status of ../failures.ts), the claim body,
// and whose key space a request reads and writes.
import { ownerDigest, type ClaimBody, type ClaimErrorBody, type ClaimFailureReason } from '@warmpool/api';
import type { UserInfo } from '@warmpool/kube';
import type { Context } from 'hono';
import type { ClaimGrant, ClaimOwner, ClaimScope } from '../../provisioning/claim-service.js';
import { FAILURE_STATUS, retryAfterOf } from '../failures.js';

/**
 * `user`: the reviewed caller (a peer's is its peerUsername); `peer`: the id of the peer cluster whose token the
 * request bears, undefined for any other caller; `namespace`: the path's, once authorized.
 */
export type ClaimApiEnv = { Variables: { user: UserInfo; namespace: string; peer: string | undefined } };

/** A sandbox id (`sb_…`) or a claimRef. */
const CLAIM_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function fail(c: Context, reason: ClaimFailureReason, error: string, retryAfterSeconds?: number): Response {
  const status = FAILURE_STATUS[reason];
  const headers: Record<string, string> = {};
  const retryAfter = retryAfterOf(reason, retryAfterSeconds);
  if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
  if (status === 401) headers['www-authenticate'] = 'Bearer';
  return c.json<ClaimErrorBody>({ error, reason }, status, headers);
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

/** Each front door is its own key space: a peer sees only the claims it made, an HTTP caller never a SandboxClaim's. */
export function scopeOf(c: Context<ClaimApiEnv>): ClaimScope {
  const namespace = c.get('namespace');
  const peer = c.get('peer');
  return peer !== undefined ? { namespace, door: 'fed', peer } : { namespace, door: 'http' };
}

/** Who claims: a peer, or the reviewed identity together with what it asked for (a replay must match both). */
export function ownerOf(c: Context<ClaimApiEnv>, asked: string): ClaimOwner {
  const peer = c.get('peer');
  if (peer !== undefined) return { door: 'fed', peer };
  return { door: 'http', digest: digestOf(c.get('user'), asked) };
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
