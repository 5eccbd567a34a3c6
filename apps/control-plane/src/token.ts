// The uniform fleet token the control plane presents to every node agent.
// Empty means none: the driver is fail-closed and pushes nothing rather than
// drive nodes unauthenticated.
import { normalizeToken } from '@warmpool/runtime';

/** Where the current token comes from; read at every call, so a rotated Secret takes effect. */
export type TokenSource = () => string | undefined;

/** A fixed token; empty or blank counts as none. */
export function staticToken(value: string | undefined): TokenSource {
  const token = normalizeToken(value);
  return () => token;
}
