// The local stack prefers well-known ports (so the printed `curl` lines are
// the same every time) but must still start when one of them is taken. The
// fallback is a quiet port (below the ephemeral range): an ephemeral one can be
// taken by any outgoing connection, the control plane's own to the apiserver
// or Redis included, between our check and its listen (seen in CI).
import { canListen, quietPort } from './ports.js';

/** `preferred` when it is free on `host` (0 means "any"), else a free quiet port. */
export async function preferredOrFreePort(
  host: string,
  preferred: number,
): Promise<{ port: number; preferred: boolean }> {
  if (preferred > 0 && (await canListen(host, preferred))) return { port: preferred, preferred: true };
  return { port: await quietPort(host), preferred: preferred === 0 };
}

/** For a log line: what became of the preferred port, when another was taken in its place ('' when it was free). */
export function takenNote(wanted: number, got: { preferred: boolean }): string {
  return got.preferred ? '' : ` (port ${wanted} was taken)`;
}
