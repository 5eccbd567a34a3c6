// What a call can fail with. A ClaimApiError is the server's answer (its
// status and machine-readable reason); a TransportError is no answer at all
// (the connection failed or the call timed out), after which a claim's outcome
// is unknown: retry it with the same claimRef.
import type { ClaimFailureReason } from './api/claims.js';

/** The claim API answered with an error body: branch on `reason`, not on the message. */
export class ClaimApiError extends Error {
  override readonly name = 'ClaimApiError';
  readonly status: number;
  /** The API's reason; `Unknown` when the body was not the API's error shape (e.g. a proxy's page). */
  readonly reason: ClaimFailureReason | 'Unknown';
  /** Seconds the server asked to wait (Retry-After), if any. */
  readonly retryAfterSeconds: number | undefined;

  constructor(status: number, reason: ClaimApiError['reason'], message: string, retryAfterSeconds: number | undefined) {
    super(message);
    this.status = status;
    this.reason = reason;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** No answer: the connection failed, or no answer came within the timeout. */
export class TransportError extends Error {
  override readonly name = 'TransportError';
  readonly kind: 'connection' | 'timeout';

  constructor(kind: TransportError['kind'], message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.kind = kind;
  }
}

/** The client could not be set up (no token, a kubeconfig it cannot use, a bad URL). */
export class ConfigurationError extends Error {
  override readonly name = 'ConfigurationError';
}
