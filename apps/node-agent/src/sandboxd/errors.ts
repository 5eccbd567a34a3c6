// A sandboxd call that got no answer. An answer of any status (429, 404, 500)
// is not an error here: the API passes it through as it came.
//
// What matters to a caller is whether the call reached sandboxd. Before the
// request was written on a connection it cannot have taken effect, and a retry
// is safe; after, it may have (a claim may have handed a sandbox over), and
// only a lookup (`GET /v1/sandboxes?claim_ref=`) can tell.
import { messageOf } from '@warmpool/runtime';
import { errors } from 'undici';

export type UpstreamFailureKind =
  /** Never sent: the connection to sandboxd failed (refused, no socket file, connect timeout). */
  | 'unreachable'
  /** Never sent: every connection stayed busy until the call's deadline. */
  | 'busy'
  /** Sent, and no answer before the deadline. */
  | 'timeout'
  /** Sent, and the connection broke before the whole answer came. */
  | 'connection_lost';

export class SandboxdUnavailableError extends Error {
  override name = 'SandboxdUnavailableError';
  readonly kind: UpstreamFailureKind;
  /** The sandboxd operation, as used in metric labels. */
  readonly operation: string;

  constructor(operation: string, kind: UpstreamFailureKind, message: string, cause?: unknown) {
    super(message, { cause });
    this.operation = operation;
    this.kind = kind;
  }

  /** Whether the request was written to sandboxd, so that it may have taken effect. */
  get sent(): boolean {
    return this.kind === 'timeout' || this.kind === 'connection_lost';
  }
}

export function isSandboxdUnavailable(err: unknown): err is SandboxdUnavailableError {
  return err instanceof SandboxdUnavailableError;
}

/** The deadline of one call passed (set by the client itself, so it covers the wait for a connection too). */
export class DeadlineError extends Error {
  override name = 'DeadlineError';
}

/**
 * Classifies what undici reported, by whether the request had been written:
 * `sent` is true once undici started the request on a connection.
 */
export function toUnavailable(
  operation: string,
  err: unknown,
  timeoutMs: number,
  sent: boolean,
): SandboxdUnavailableError {
  const timedOut =
    err instanceof DeadlineError || err instanceof errors.HeadersTimeoutError || err instanceof errors.BodyTimeoutError;
  if (!sent) {
    if (timedOut)
      return new SandboxdUnavailableError(
        operation,
        'busy',
        `sandboxd busy: no connection to it came free within ${timeoutMs} ms; the call was not sent`,
        err,
      );
    return new SandboxdUnavailableError(operation, 'unreachable', `sandboxd unreachable (${detailOf(err)})`, err);
  }
  if (timedOut)
    return new SandboxdUnavailableError(operation, 'timeout', `sandboxd did not answer within ${timeoutMs} ms`, err);
  return new SandboxdUnavailableError(
    operation,
    'connection_lost',
    `sandboxd closed the connection before answering (${detailOf(err)})`,
    err,
  );
}

function detailOf(err: unknown): string {
  if (err instanceof errors.ConnectTimeoutError) return 'connect timeout';
  const code = (err as { code?: unknown }).code;
  // undici's own codes (UND_ERR_SOCKET) say less than its message ("other side closed").
  return typeof code === 'string' && !code.startsWith('UND_ERR') ? code : messageOf(err);
}

const CONNECT_FAILURES = new Set([
  'ECONNREFUSED',
  'ENOENT',
  'EACCES',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** Whether `err` is a failure to connect, so the request surely was not sent. */
export function isConnectFailure(err: unknown): boolean {
  if (err instanceof errors.ConnectTimeoutError) return true;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && CONNECT_FAILURES.has(code);
}
