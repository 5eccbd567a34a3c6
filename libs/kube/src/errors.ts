// One error type for every answer the apiserver gives that is not a success,
// carrying the fields of its Status body, so callers branch on code and reason
// (404, 409 Conflict vs AlreadyExists, 410 Expired, 422 Invalid) rather than
// on message text.

/** The `details` of a Kubernetes Status: which object, and field-level causes. */
export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: Array<{ reason?: string; message?: string; field?: string }>;
  retryAfterSeconds?: number;
}

/** The body the apiserver sends with a failure (kind: Status). */
export interface KubeStatus {
  kind?: string;
  apiVersion?: string;
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  details?: StatusDetails;
}

export class KubeApiError extends Error {
  /** The HTTP status code (or the Status body's code for errors that arrive inside a watch stream). */
  readonly statusCode: number;
  /** The machine-readable reason: NotFound, Conflict, AlreadyExists, Expired, Gone, Invalid, ... or '' when unknown. */
  readonly reason: string;
  readonly details: StatusDetails | undefined;

  constructor(statusCode: number, reason: string, message: string, details?: StatusDetails) {
    super(message);
    this.name = 'KubeApiError';
    this.statusCode = statusCode;
    this.reason = reason;
    this.details = details;
  }

  /** Builds the error from a Status body; `fallbackCode` is used when the body has no code. */
  static fromStatus(status: KubeStatus, fallbackCode: number): KubeApiError {
    const code = typeof status.code === 'number' && status.code > 0 ? status.code : fallbackCode;
    return new KubeApiError(code, status.reason ?? '', status.message ?? `HTTP ${code}`, status.details);
  }
}

export function isKubeApiError(err: unknown): err is KubeApiError {
  return err instanceof KubeApiError;
}

export function isNotFound(err: unknown): boolean {
  return err instanceof KubeApiError && err.statusCode === 404;
}

/** The call's answer, or undefined when the object is not there (controller-runtime's `client.IgnoreNotFound`). */
export async function ignoreNotFound<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** An update lost an optimistic-concurrency race (stale resourceVersion). Not AlreadyExists, which is also 409. */
export function isConflict(err: unknown): boolean {
  return err instanceof KubeApiError && err.statusCode === 409 && err.reason === 'Conflict';
}

export function isAlreadyExists(err: unknown): boolean {
  return err instanceof KubeApiError && err.statusCode === 409 && err.reason === 'AlreadyExists';
}

/** The resourceVersion asked for is older than the server keeps: the caller must relist. */
export function isResourceExpired(err: unknown): boolean {
  return err instanceof KubeApiError && err.statusCode === 410;
}

export function isInvalid(err: unknown): boolean {
  return err instanceof KubeApiError && err.statusCode === 422;
}
