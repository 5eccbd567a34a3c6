// Why the core refused an operation. The HTTP layer maps each reason to the
// status the sandboxd contract documents; the core itself knows no HTTP.

export type RefusalReason =
  /** The node is draining: no new claims. */
  | 'draining'
  /** The node holds `maxClaims` claims. */
  | 'max-claims'
  /** No warm sandbox and no room to boot one cold. */
  | 'no-room'
  /** A boot or hand-over failed (injected by the failure rates). */
  | 'provisioning-failed'
  /** `net: egress` on a node without an egress attachment. */
  | 'no-egress'
  /** No claim with that id. */
  | 'not-found'
  /** The node was closed while the request was in flight. */
  | 'closed';

export class SandboxdRefusal extends Error {
  override name = 'SandboxdRefusal';
  readonly reason: RefusalReason;

  constructor(reason: RefusalReason, message: string) {
    super(message);
    this.reason = reason;
  }
}
