// Every answer the router gives itself (never the sandbox's): a status, a
// machine-readable reason and the words, as `{"detail", "reason"}` (upstream's
// router answers `{"detail"}`; `reason` is warmpool's addition). Which status
// each reason takes is decided here, once.
import type { RuntimeError, RuntimeErrorReason } from '@warmpool/api';

export const STATUS_OF: Record<RuntimeErrorReason, number> = {
  InvalidHeader: 400,
  UnsupportedPort: 400,
  InvalidPath: 400,
  InvalidBody: 400,
  PayloadTooLarge: 413,
  OutputTooLarge: 413,
  Unauthenticated: 401,
  Forbidden: 403,
  SandboxNotFound: 404,
  SandboxExpired: 410,
  NotFound: 404,
  NotADirectory: 400,
  IsADirectory: 400,
  RouteNotFound: 404,
  MethodNotAllowed: 405,
  BackendUnavailable: 502,
  BackendTimeout: 504,
  ReviewUnavailable: 503,
  Internal: 500,
};

export class Refusal {
  readonly status: number;
  readonly body: RuntimeError;

  constructor(reason: RuntimeErrorReason, detail: string) {
    this.status = STATUS_OF[reason];
    this.body = { detail, reason };
  }

  get reason(): RuntimeErrorReason {
    return this.body.reason;
  }
}

export function refusal(reason: RuntimeErrorReason, detail: string): Refusal {
  return new Refusal(reason, detail);
}
