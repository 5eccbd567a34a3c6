// A caller who gives up is answered Timeout at once; the claim goes on. A
// sandbox then served under a claimRef the front door generated is released:
// nobody can come back for it.
//
// The claim path needs only two things of a caller that may give up: whether
// it has, and a word when it does (CallerGone). The claim API's hot path
// answers them from its response's own 'close' (direct-create.ts): an
// AbortController and its EventTarget listeners per request cost more than
// the rest of its give-up handling together. An AbortSignal is made only for
// the calls that need one (a spilled claim's peer call).
import { ClaimFailure, type ClaimOrder, type ServedGrant } from './claim-service.js';

/** A caller that may give up before its answer. */
export interface CallerGone {
  /** It has given up. */
  readonly gone: boolean;
  /**
   * Calls `listener` once, when it gives up; the function returned stops that. Never called for a caller gone
   * already: read `gone` first, in the same turn.
   */
  onGone(listener: () => void): () => void;
}

/** The caller is gone when `signal` aborts. */
export function callerGoneWith(signal: AbortSignal): CallerGone {
  return {
    get gone() {
      return signal.aborted;
    },
    onGone(listener) {
      signal.addEventListener('abort', listener, { once: true });
      return () => signal.removeEventListener('abort', listener);
    },
  };
}

/**
 * An AbortSignal that aborts when the caller gives up, for a call that takes one; `stop()` once the call is over ends
 * the listening.
 */
export function abortSignalOf(caller: CallerGone): { signal: AbortSignal; stop: () => void } {
  const controller = new AbortController();
  const abort = (): void => controller.abort(new Error('the caller gave up'));
  if (caller.gone) {
    abort();
    return { signal: controller.signal, stop: () => undefined };
  }
  return { signal: controller.signal, stop: caller.onGone(abort) };
}

export function answerUntilGivenUp(
  order: ClaimOrder,
  answer: Promise<ServedGrant>,
  caller: CallerGone,
  releaseUnanswered: (grant: ServedGrant, why: string) => void,
): Promise<ServedGrant> {
  const abandon = (grant: ServedGrant): void => {
    // Only a sandbox claimed for this very call: a replayed one is someone else's (a generated name can collide).
    if (order.claimRefGenerated === true && grant.fresh === true) releaseUnanswered(grant, 'the caller gave up');
  };
  if (caller.gone) {
    void answer.then(abandon, () => undefined);
    return Promise.reject(new ClaimFailure('Timeout', 'the caller gave up'));
  }
  return new Promise<ServedGrant>((resolve, reject) => {
    let gaveUp = false;
    const stopListening = caller.onGone(() => {
      gaveUp = true;
      reject(new ClaimFailure('Timeout', 'the caller gave up'));
    });
    answer.then(
      (grant) => {
        stopListening();
        if (!gaveUp) resolve(grant);
        else abandon(grant);
      },
      (err: unknown) => {
        stopListening();
        reject(err);
      },
    );
  });
}
