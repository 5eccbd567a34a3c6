// A peer's claims live in a claimRef space of their own: the claimRef a peer
// forwards is served here as `fp-<peer digest>-<claim digest>`, so
// - a peer's pinned create can never name (and be handed the token of) a claim
//   of another peer or of this cluster's own callers, whatever claimRef it sends;
// - whether a claim is a given peer's is read from its claimRef alone, which
//   the pipeline stores with every claim (index and node alike).
// The same (peer, claimRef) is the same claimRef here, so a peer's retry still
// answers the claim it already has.
import { createHash } from 'node:crypto';

const PEER_DIGEST_CHARS = 12;
const CLAIM_DIGEST_CHARS = 32;

function hex(text: string, chars: number): string {
  return createHash('sha256').update(text).digest('hex').slice(0, chars);
}

function peerPrefix(peer: string): string {
  return `fp-${hex(peer, PEER_DIGEST_CHARS)}-`;
}

/** The claimRef a peer's claimRef is served under here: a DNS label of 48 characters. */
export function peerClaimRef(peer: string, claimRef: string): string {
  return `${peerPrefix(peer)}${hex(`${peer}\n${claimRef}`, CLAIM_DIGEST_CHARS)}`;
}

/** Whether a claimRef served here is one of `peer`'s claims. */
export function isPeerClaimRef(peer: string, claimRef: string): boolean {
  const prefix = peerPrefix(peer);
  return (
    claimRef.startsWith(prefix) && new RegExp(`^[0-9a-f]{${CLAIM_DIGEST_CHARS}}$`).test(claimRef.slice(prefix.length))
  );
}
