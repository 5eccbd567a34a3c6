// The uniform fleet token the control plane presents to every node agent.
// Empty means none: the driver is fail-closed and pushes nothing rather than
// drive nodes unauthenticated.
import { normalizeToken, type TokenRotation } from '@warmpool/runtime';

/**
 * Where the current token comes from; read at every call, so a rotated
 * Secret takes effect. One read from a file also carries its rotation: the
 * token it replaced, tried when an agent that has not read the new Secret
 * yet answers 401 (see the README's rotation procedure).
 */
export type TokenSource = (() => string | undefined) & { readonly rotation?: TokenRotation<string> };

/** The rotation of a token file as a TokenSource. */
export function rotatingToken(rotation: TokenRotation<string>): TokenSource {
  return Object.assign(() => rotation.token, { rotation });
}

/** A fixed token; empty or blank counts as none. */
export function staticToken(value: string | undefined): TokenSource {
  const token = normalizeToken(value);
  return () => token;
}
