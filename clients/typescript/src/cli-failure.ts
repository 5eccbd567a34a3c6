// How the CLI reports a failure: the exit code says what failed, the stderr
// JSON says it in words ({"error", "reason", "status"}).
import { ClaimApiError, ConfigurationError, TransportError } from './errors.js';

/** A wrong command line. */
export class UsageError extends Error {}

export const EXIT = {
  ok: 0,
  /** Anything else the server answered. */
  failed: 1,
  /** A wrong command line or setting, or a request the API refused as malformed (400). */
  usage: 2,
  /** 401 or 403: the token, or its RBAC. */
  denied: 3,
  /** 404: no such pool, Env or claim, or the pool is not driven by warmpool, or the claim expired. */
  notFound: 4,
  /** 409: the claimRef is held by another owner. */
  conflict: 5,
  /** 429: no capacity now. */
  noCapacity: 6,
  /** No answer, or 5xx, after every retry: the outcome of a claim is unknown (retry with the same --claim-ref). */
  unavailable: 7,
} as const;

/** The exit code and the stderr JSON for a failure. */
export function failure(error: unknown): { code: number; report: Record<string, unknown> } {
  if (error instanceof UsageError) return { code: EXIT.usage, report: { error: error.message, reason: 'Usage' } };
  if (error instanceof ConfigurationError)
    return { code: EXIT.usage, report: { error: error.message, reason: 'Configuration' } };
  if (error instanceof TypeError && (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') === true)
    return { code: EXIT.usage, report: { error: error.message, reason: 'Usage' } };
  if (error instanceof TransportError)
    return {
      code: EXIT.unavailable,
      report: { error: error.message, reason: error.kind === 'timeout' ? 'Timeout' : 'Unreachable' },
    };
  if (error instanceof ClaimApiError) {
    const report = { error: error.message, reason: error.reason, status: error.status };
    const code =
      error.status === 400
        ? EXIT.usage
        : error.status === 401 || error.status === 403
          ? EXIT.denied
          : error.status === 404
            ? EXIT.notFound
            : error.status === 409
              ? EXIT.conflict
              : error.status === 429
                ? EXIT.noCapacity
                : error.status >= 500
                  ? EXIT.unavailable
                  : EXIT.failed;
    return { code, report };
  }
  return {
    code: EXIT.failed,
    report: { error: error instanceof Error ? error.message : String(error), reason: 'Internal' },
  };
}
