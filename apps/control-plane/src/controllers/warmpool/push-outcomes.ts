// What the driver makes of a push's answer: an applied push updates the
// node's view (one run when the round has settled covers every answer); a 409
// with a generation we never issued re-checks leadership; a failure counts
// towards taking the node out of placement.
import { NoTokenError, NotLeadingError, StaleGenerationError } from '../../agents/errors.js';
import type { DriverContext, Term } from './context.js';
import type { PushJob, PushOutcome } from './pushers.js';

/** While pushes are still settling, status catches up with the answers at most this late. */
const PUSHED_REFRESH_MS = 1_000;

export function onPushSettled(
  ctx: DriverContext,
  term: Term,
  job: PushJob,
  outcome: PushOutcome,
  seconds: number,
): void {
  const { logger, metrics } = ctx.options;
  const node = job.node.name;
  if (outcome.kind === 'applied') {
    ctx.tracker.recordAnswer(node, outcome.info);
    metrics.setPools(node, 'applied', seconds);
    logger.debug('pools set', { node, generation: job.generation, pools: job.desired.pools.length });
    // The answers change only what status reports (the nodes' targets), so one run when the round
    // has settled covers them all, instead of a full reconcile per answer competing with the pushes
    // for the event loop for the whole fan-out. A long round (slow or retried nodes) still refreshes
    // status every PUSHED_REFRESH_MS.
    term.unseenAnswers = true;
    term.refresh ??= setTimeout(() => {
      term.refresh = undefined;
      term.unseenAnswers = false;
      if (ctx.isCurrent(term)) ctx.poke('pushed');
    }, PUSHED_REFRESH_MS);
    return;
  }
  const err = outcome.error;
  if (err instanceof NoTokenError) {
    ctx.poke('no-token');
    return;
  }
  // Past the renew deadline: nothing was sent, and the elector ends the term.
  if (err instanceof NotLeadingError) return;
  if (err instanceof StaleGenerationError) {
    onStaleGeneration(ctx, term, job, err, seconds);
    return;
  }
  metrics.setPools(node, 'error', seconds);
  const crossed = ctx.tracker.recordFailure(node, err);
  const view = ctx.tracker.view(node);
  logger.warn('SetPools failed', {
    node,
    address: job.node.address,
    generation: job.generation,
    failures: view?.failures,
    err,
  });
  if (crossed) ctx.poke('node-failing');
}

/** The round has settled: one run for its answers. Failures poke on their own (above), not here. */
export function onPushesSettled(ctx: DriverContext, term: Term): void {
  if (!term.unseenAnswers) return;
  clearTimeout(term.refresh);
  term.refresh = undefined;
  term.unseenAnswers = false;
  ctx.poke('pushed');
}

function onStaleGeneration(
  ctx: DriverContext,
  term: Term,
  job: PushJob,
  err: StaleGenerationError,
  seconds: number,
): void {
  const { logger, metrics, generations } = ctx.options;
  const node = job.node.name;
  metrics.setPools(node, 'stale_generation', seconds);
  const issued = generations.highestIssued;
  if (issued !== undefined && err.appliedGeneration <= issued) {
    // Our own later push reached the node first; its answer covers this one.
    logger.debug('node had already applied a later push of ours', {
      node,
      generation: job.generation,
      appliedGeneration: err.appliedGeneration,
    });
    return;
  }
  ctx.tracker.recordRefusal(node, err.appliedGeneration);
  logger.warn('node refused our generation with one we never issued: re-checking leadership', {
    node,
    generation: job.generation,
    appliedGeneration: err.appliedGeneration,
    highestIssued: issued ?? null,
  });
  confirmLeadership(ctx, term);
}

/**
 * A node claims a generation we never issued: either a later leader pushed
 * it (we are deposed: the re-check ends our term) or it is forged (the node
 * leaves placement through the bound in nodes/tracker.ts, at the run this pokes).
 */
function confirmLeadership(ctx: DriverContext, term: Term): void {
  if (term.confirming !== undefined) return;
  const { logger } = ctx.options;
  term.confirming = (async () => {
    const leading = await ctx.leadership.confirm(term.signal);
    if (!leading && !term.signal.aborted) logger.warn('another replica leads: stopping');
  })()
    .catch((err: unknown) => {
      if (!term.signal.aborted) logger.warn('cannot re-check leadership', { err });
    })
    .finally(() => {
      term.confirming = undefined;
      if (ctx.isCurrent(term)) ctx.poke('stale-generation');
    });
}
