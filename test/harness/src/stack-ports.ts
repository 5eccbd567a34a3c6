// The local stack prefers well-known ports (so the printed `curl` lines are
// the same every time) but must still start when one of them is taken.
import { canListen, freePort } from './ports.js';

/** `preferred` when it is free on `host` (0 means "any"), else a free port the OS picks. */
export async function preferredOrFreePort(
  host: string,
  preferred: number,
): Promise<{ port: number; preferred: boolean }> {
  if (preferred > 0 && (await canListen(host, preferred))) return { port: preferred, preferred: true };
  return { port: await freePort(host), preferred: preferred === 0 };
}
