// What a sandboxd call comes back with: an answer of any status, kept as
// sandboxd's bytes so the API can pass it through without re-encoding.
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';

export interface SandboxdAnswer {
  status: number;
  /** sandboxd's body byte for byte; empty for 204. */
  body: Uint8Array;
  contentType: string | undefined;
  /** sandboxd's Retry-After, kept for 429 and 503 pass-through. */
  retryAfter?: string;
}

/** Where a buffered call ends: exactly one of the two is called, once. */
export interface SandboxdReceiver {
  answer(answer: SandboxdAnswer): void;
  /**
   * No answer: a SandboxdUnavailableError when sandboxd refused the
   * connection, reset it or did not answer in time; any other error is a
   * request undici would not send (a bug here, not sandboxd's doing).
   */
  failed(err: Error): void;
}

/** An answer whose body is still arriving: for lists, which can be large. */
export interface SandboxdStreamingAnswer {
  status: number;
  body: Readable;
  contentType: string | undefined;
}

/** The first Content-Type of an answer's headers. */
export function contentTypeOf(headers: Dispatcher.ResponseData['headers']): string | undefined {
  const value = headers['content-type'];
  return Array.isArray(value) ? value[0] : value;
}
