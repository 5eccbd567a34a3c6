// A failure of the claim pipeline (or of a review) as the Sandbox API answers
// it: a Kubernetes Status whose code is the one every front door answers for
// that reason (../http/failures.ts), whose reason is the Kubernetes one
// client-go reads for that code, and whose causes carry warmpool's own reason.
import type { ClaimFailureReason } from '@warmpool/api';
import { ReviewUnavailable } from '@warmpool/kube';
import { messageOf } from '@warmpool/runtime';
import { FAILURE_STATUS, retryAfterOf } from '../http/failures.js';
import { ClaimFailure } from '../provisioning/claim-service.js';
import { ApiError, type StatusReason } from './responses.js';

/** The Kubernetes reason of each code a claim failure answers (502 is an InternalError, as client-go reads it). */
const KUBE_REASON: Record<(typeof FAILURE_STATUS)[ClaimFailureReason], StatusReason> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  // A claimRef live for another owner: the Sandbox's name is taken.
  409: 'AlreadyExists',
  429: 'TooManyRequests',
  502: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/** The pool reasons name spec.warmPoolRef.name, the field that made them. */
const FIELD_OF: Partial<Record<ClaimFailureReason, string>> = {
  PoolNotFound: 'spec.warmPoolRef.name',
  NotDriven: 'spec.warmPoolRef.name',
};

export function apiErrorOf(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof ClaimFailure) return claimFailureError(err.reason, err.message, err.retryAfterSeconds);
  if (err instanceof ReviewUnavailable) return claimFailureError('Unavailable', err.message, 1);
  return new ApiError('InternalError', messageOf(err));
}

function claimFailureError(reason: ClaimFailureReason, message: string, retryAfterSeconds?: number): ApiError {
  const code = FAILURE_STATUS[reason];
  const field = FIELD_OF[reason];
  const retry = retryAfterOf(reason, retryAfterSeconds);
  return new ApiError(
    KUBE_REASON[code],
    field !== undefined ? `${field}: ${message}` : reason === 'NoCapacity' ? `no capacity: ${message}` : message,
    {
      causes: [{ reason, message, ...(field !== undefined ? { field } : {}) }],
      ...(retry !== undefined ? { retryAfterSeconds: retry } : {}),
    },
    code,
  );
}
