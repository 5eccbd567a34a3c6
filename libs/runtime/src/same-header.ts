// Whether a request's Authorization header is the one a connection sent
// before, for the checks that remember a header per keep-alive connection
// (ConnectionTokenCheck here; the control plane's TokenReview keys). One
// definition, so every such check compares alike.

/**
 * Whether `presented` equals `remembered` (non-empty), in time that depends on `presented`'s length only: every
 * character of it is compared, against `remembered` read round-robin, and the lengths are folded in. A connection
 * shared by several callers (a proxy pooling its upstream connections) so learns nothing about a header another caller
 * sent from how long the compare took.
 */
export function sameHeader(presented: string, remembered: string): boolean {
  const length = remembered.length;
  let diff = presented.length ^ length;
  for (let i = 0; i < presented.length; i++) diff |= presented.charCodeAt(i) ^ remembered.charCodeAt(i % length);
  return diff === 0;
}
