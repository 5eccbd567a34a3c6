// The claim_ref warmpool writes on every node claim: who owns the sandbox and
// through which front door. The node is the source of truth for every claimed
// sandbox, so a node's own list must be enough to rebuild the claim index
// (Redis may lose any key): every field the index needs to answer, renew,
// release or refuse a replay is in this string.
//
//   crd:<ns>/<name>/<uid>                 a SandboxClaim (uid: a deleted and re-created claim is another owner)
//   http:<ns>/<claimRef>/<pool>/<owner>   the HTTP claim API (and the Sandbox API's create); owner: see ownerDigest
//   fed:<peer>/<ns>/<claimRef>/<pool>     a claim a peer cluster forwarded (the peer is the owner)
//
// Namespaces, claimRefs and pools are DNS labels or subdomains (no '/' or ':'),
// the uid is a UUID, the owner a hex digest; a peer id is URI-encoded.
import { hash } from 'node:crypto';

import type { z } from 'zod';
import type { claimDoorSchema } from './claim-jobs.js';

export type ClaimDoor = z.output<typeof claimDoorSchema>;

export type NodeClaimOwner =
  | { door: 'crd'; namespace: string; name: string; uid: string }
  | { door: 'http'; namespace: string; claimRef: string; pool: string; owner: string }
  | { door: 'fed'; peer: string; namespace: string; claimRef: string; pool: string };

const SEGMENT = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const UID = /^[0-9a-fA-F-]{1,64}$/;
const DIGEST = /^[0-9a-f]{32}$/;

export function formatNodeClaimRef(owner: NodeClaimOwner): string {
  switch (owner.door) {
    case 'crd':
      return `crd:${owner.namespace}/${owner.name}/${owner.uid}`;
    case 'http':
      return `http:${owner.namespace}/${owner.claimRef}/${owner.pool}/${owner.owner}`;
    case 'fed':
      return `fed:${encodeURIComponent(owner.peer)}/${owner.namespace}/${owner.claimRef}/${owner.pool}`;
  }
}

/** The owner a node's claim_ref names; undefined for anything warmpool did not write (left alone by everyone). */
export function parseNodeClaimRef(ref: string | undefined): NodeClaimOwner | undefined {
  if (ref === undefined) return undefined;
  const colon = ref.indexOf(':');
  if (colon <= 0) return undefined;
  const door = ref.slice(0, colon);
  const parts = ref.slice(colon + 1).split('/');
  if (door === 'crd' && parts.length === 3) {
    const [namespace, name, uid] = parts as [string, string, string];
    if (SEGMENT.test(namespace) && SEGMENT.test(name) && UID.test(uid)) return { door, namespace, name, uid };
  }
  if (door === 'http' && parts.length === 4) {
    const [namespace, claimRef, pool, owner] = parts as [string, string, string, string];
    if (SEGMENT.test(namespace) && SEGMENT.test(claimRef) && SEGMENT.test(pool) && DIGEST.test(owner))
      return { door, namespace, claimRef, pool, owner };
  }
  if (door === 'fed' && parts.length === 4) {
    const [encodedPeer, namespace, claimRef, pool] = parts as [string, string, string, string];
    let peer: string;
    try {
      peer = decodeURIComponent(encodedPeer);
    } catch {
      return undefined;
    }
    if (peer !== '' && SEGMENT.test(namespace) && SEGMENT.test(claimRef) && SEGMENT.test(pool))
      return { door, peer, namespace, claimRef, pool };
  }
  return undefined;
}

/** The namespace and the name a claim is known by in its namespace (the claimRef, or the SandboxClaim's name). */
export function claimNameOf(owner: NodeClaimOwner): { namespace: string; name: string } {
  return { namespace: owner.namespace, name: owner.door === 'crd' ? owner.name : owner.claimRef };
}

/**
 * Who may replay an HTTP claim: a digest of the caller's identity (TokenReview
 * username and uid) and of what it asked for (`pool:<name>` or `env:<name>`),
 * so a replay by anyone else, or for anything else, is told apart from the
 * node's own record alone. Not a secret: it only has to be unforgeable by a
 * caller who is not that identity, which the TokenReview already ensures.
 */
export function ownerDigest(identity: { username: string; uid?: string }, asked: string): string {
  return hash('sha256', `${identity.username}\n${identity.uid ?? ''}\n${asked}`, 'hex').slice(0, 32);
}
