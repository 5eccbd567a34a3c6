// The retry rule of a claim API client: the API is idempotent by claimRef, so
// a call whose outcome is unknown or that the server could not serve for now
// is sent again, unchanged (the same claimRef), and never answers with a
// second sandbox. Nothing else is retried: a 4xx is the caller's to fix.
import { ClaimApiError, TransportError } from './errors.js';

export interface RetryPolicy {
  /** Attempts in all, the first included (default 5). */
  attempts: number;
  /** First pause between attempts; doubled each time up to maxDelayMs, with jitter (default 200 ms). */
  baseDelayMs: number;
  maxDelayMs: number;
  /** Also retry 429 NoCapacity (after its Retry-After); default false: the caller decides. */
  retryNoCapacity: boolean;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, baseDelayMs: 200, maxDelayMs: 5_000, retryNoCapacity: false };

/** Whether `error` leaves the call worth sending again unchanged. */
export function isRetryable(error: unknown, policy: RetryPolicy): boolean {
  if (error instanceof TransportError) return true;
  if (error instanceof ClaimApiError) {
    if (error.status >= 500) return true;
    if (error.status === 429 && policy.retryNoCapacity) return true;
  }
  return false;
}

/** The pause before attempt `attempt + 1` (attempt counts from 1). */
export function delayBefore(attempt: number, error: unknown, policy: RetryPolicy): number {
  const backoff = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  const jittered = backoff / 2 + Math.random() * (backoff / 2);
  const asked = error instanceof ClaimApiError ? (error.retryAfterSeconds ?? 0) * 1000 : 0;
  return Math.max(jittered, Math.min(asked, policy.maxDelayMs));
}

/** Runs `call` under `policy`, telling `onRetry` about each failure it retries. */
export async function withRetries<T>(
  call: () => Promise<T>,
  policy: RetryPolicy,
  onRetry: (attempt: number, error: unknown, delayMs: number) => void = () => undefined,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (attempt >= policy.attempts || !isRetryable(error, policy)) throw error;
      const delayMs = delayBefore(attempt, error, policy);
      onRetry(attempt, error, delayMs);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}
