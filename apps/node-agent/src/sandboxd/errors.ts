// A sandboxd call that got no answer. An answer of any status (429, 404, 500)
// is not an error here: the API passes it through as it came.
import { messageOf } from '@warmpool/runtime';
import { errors } from 'undici';

export type UpstreamFailureKind = 'unreachable' | 'timeout';

export class SandboxdUnavailableError extends Error {
  override name = 'SandboxdUnavailableError';
  readonly kind: UpstreamFailureKind;
  /** The sandboxd operation, as used in metric labels. */
  readonly operation: string;

  constructor(operation: string, kind: UpstreamFailureKind, message: string, cause: unknown) {
    super(message, { cause });
    this.operation = operation;
    this.kind = kind;
  }
}

export function isSandboxdUnavailable(err: unknown): err is SandboxdUnavailableError {
  return err instanceof SandboxdUnavailableError;
}

/** Classifies what undici threw; timeouts are told apart because a timed-out claim may still have happened. */
export function toUnavailable(operation: string, err: unknown, timeoutMs: number): SandboxdUnavailableError {
  if (
    err instanceof errors.HeadersTimeoutError ||
    err instanceof errors.BodyTimeoutError ||
    err instanceof errors.ConnectTimeoutError
  ) {
    return new SandboxdUnavailableError(operation, 'timeout', `sandboxd did not answer within ${timeoutMs} ms`, err);
  }
  const code = (err as { code?: unknown }).code;
  const detail = typeof code === 'string' ? code : messageOf(err);
  return new SandboxdUnavailableError(operation, 'unreachable', `sandboxd unreachable (${detail})`, err);
}
