// A watch's query parameters, read as kube-apiserver reads them: a malformed
// one is a 400 before the stream starts (never a 410 that sends the client
// into a relist loop), and no timeout can overflow Node's timers.
import { ApiError } from './responses.js';

/** Where a watch starts: with every current object, or after a resourceVersion this replica handed out. */
export type WatchStart = { initial: true } | { initial: false; since: number };

const DECIMAL = /^(0|[1-9][0-9]*)$/;
const INTEGER = /^-?(0|[1-9][0-9]*)$/;

/** resourceVersion "" or "0" (or sendInitialEvents=true) starts with the current objects; any other must be decimal. */
export function watchStartOf(resourceVersion: string | null, sendInitialEvents: boolean): WatchStart {
  const text = resourceVersion ?? '';
  const since = text === '' ? 0 : DECIMAL.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(since))
    throw new ApiError(
      'BadRequest',
      `invalid resourceVersion ${JSON.stringify(text)}: resourceVersions of sandboxes are decimal integers`,
    );
  return sendInitialEvents || since === 0 ? { initial: true } : { initial: false, since };
}

export interface WatchTimeouts {
  /** A watch that names no timeout lasts between this and twice this, at random, as kube-apiserver's do. */
  defaultMs: number;
  random?: () => number;
}

/**
 * How long a watch lasts. timeoutSeconds absent or not positive: the default window, at
 * random so that watches opened together do not all come back together.
 * Otherwise honoured up to twice the default (the longest a watch that names
 * no timeout gets), so that no value can overflow a timer (Node's fire at
 * once past 2^31 - 1 ms). Not an integer: 400, as kube-apiserver answers.
 */
export function watchTimeoutMs(timeoutSeconds: string | null, timeouts: WatchTimeouts): number {
  const text = timeoutSeconds ?? '';
  if (text !== '' && !INTEGER.test(text))
    throw new ApiError('BadRequest', `invalid timeoutSeconds ${JSON.stringify(text)}: not an integer`);
  const seconds = text === '' ? 0 : Number(text);
  const longest = 2 * timeouts.defaultMs;
  if (seconds <= 0) return timeouts.defaultMs * (1 + (timeouts.random ?? Math.random)());
  return Math.min(seconds * 1000, longest);
}
