// A caller who gives up (its request's signal aborts) is answered Timeout at
// once; the claim goes on. A sandbox then served under a claimRef the front
// door generated is released: nobody can come back for it.
import { ClaimFailure, type ClaimOrder, type ServedGrant } from './claim-service.js';

export function answerUntilGivenUp(
  order: ClaimOrder,
  answer: Promise<ServedGrant>,
  signal: AbortSignal,
  releaseUnanswered: (grant: ServedGrant, why: string) => void,
): Promise<ServedGrant> {
  const abandon = (grant: ServedGrant): void => {
    // Only a sandbox claimed for this very call: a replayed one is someone else's (a generated name can collide).
    if (order.claimRefGenerated === true && grant.fresh === true) releaseUnanswered(grant, 'the caller gave up');
  };
  if (signal.aborted) {
    void answer.then(abandon, () => undefined);
    return Promise.reject(new ClaimFailure('Timeout', 'the caller gave up'));
  }
  return new Promise<ServedGrant>((resolve, reject) => {
    let gaveUp = false;
    const onAbort = (): void => {
      gaveUp = true;
      reject(new ClaimFailure('Timeout', 'the caller gave up'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    answer.then(
      (grant) => {
        signal.removeEventListener('abort', onAbort);
        if (!gaveUp) resolve(grant);
        else abandon(grant);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
