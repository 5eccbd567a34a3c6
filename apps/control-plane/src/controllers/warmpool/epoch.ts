// Taking a generation epoch for a term, in the background: retried while the
// apiserver is away, slowly while the generations ran out (only a human fixes
// that; the term reports not ready meanwhile). While one is being taken, runs
// push nothing and do not ask again, so an exhausted source is retried on the
// backoff, never by a run loop.
import { Backoff, sleep } from '@warmpool/kube';
import { GenerationExhaustedError } from '../../generation/generation.js';
import type { DriverContext, Term } from './context.js';

/** Retrying after the generations ran out: slow, since only a human fixes that. */
const EXHAUSTED_RETRY = { initialMs: 5_000, maxMs: 60_000 };

/** Takes a new epoch (above `atLeastAbove`, if given) unless one is being taken; the term reconciles once it has. */
export function takeEpoch(ctx: DriverContext, term: Term, atLeastAbove?: number): void {
  if (term.advancing !== undefined) return;
  term.advancing = advance(ctx, term, atLeastAbove).finally(() => {
    term.advancing = undefined;
    if (ctx.isCurrent(term)) ctx.poke('epoch');
  });
}

async function advance(ctx: DriverContext, term: Term, atLeastAbove: number | undefined): Promise<void> {
  const { generations, logger } = ctx.options;
  const backoff = new Backoff({ initialMs: 200, maxMs: 5_000 });
  const exhaustedBackoff = new Backoff(EXHAUSTED_RETRY);
  while (!term.signal.aborted) {
    try {
      const epoch = await generations.advance(atLeastAbove, term.signal);
      if (!term.signal.aborted)
        logger.info(
          generations.continued
            ? "continued the previous term's generation epoch (no leader took one since)"
            : 'took a generation epoch',
          { epoch },
        );
      if (term.exhausted !== undefined) logger.info('generations available again');
      term.exhausted = undefined;
      return;
    } catch (err) {
      if (term.signal.aborted) return;
      const exhausted = err instanceof GenerationExhaustedError;
      const delay = exhausted ? exhaustedBackoff.next() : backoff.next();
      if (exhausted) {
        term.exhausted = err.message;
        logger.error('no generation left: nothing can be pushed, reporting not ready; see the README (generations)', {
          err,
          retryInMs: Math.round(delay),
        });
      } else {
        logger.warn('cannot take a generation epoch; retrying', { err, retryInMs: Math.round(delay) });
      }
      await sleep(delay, term.signal);
    }
  }
}
