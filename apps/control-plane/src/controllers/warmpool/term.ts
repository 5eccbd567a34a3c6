// A driving term's parts, made when leadership is taken: its push lanes, its
// probe sampler, its spread (kept between runs) and its status lane, all
// stopped by the term's signal. A push's or a sample's answer speaks to the
// term it belongs to only while that term is still the current one.
import { poolKeyId } from '@warmpool/api';
import type { Targets } from '@warmpool/pool-model';
import type { Clock } from '@warmpool/runtime';
import type { NodeTracker, NodeView } from '../../nodes/tracker.js';
import type { DriverContext, Term } from './context.js';
import { onPushesSettled, onPushSettled } from './push-outcomes.js';
import { Pushers } from './pushers.js';
import { ProbeSampler } from './sampler.js';
import { IncrementalSpread } from './spread-memo.js';
import type { PoolStatusQueue } from './status-queue.js';

export interface TermParts {
  ctx: DriverContext;
  tracker: NodeTracker;
  statuses: PoolStatusQueue;
  clock: Clock;
  poke(reason: string): void;
  /** The reason a sample pokes with (the periodic resync). */
  periodic: string;
}

/** A new term, starting its spread from the targets the nodes hold. */
export function newTerm(parts: TermParts, held: Targets): Term {
  const { ctx, tracker, statuses, clock, poke, periodic } = parts;
  const { options, settings, leadership } = ctx;
  const controller = new AbortController();
  const { signal } = controller;
  const pushers = new Pushers({
    setter: options.setter,
    concurrency: settings.agentCallConcurrency,
    signal,
    now: () => clock.now(),
    mayPush: () => leadership.holding(),
    onSettled: (job, outcome, seconds) => {
      // A push of an ended term has nothing to say to the current one.
      if (ctx.isCurrent(term)) onPushSettled(ctx, term, job, outcome, seconds);
    },
    onIdle: () => {
      if (ctx.isCurrent(term)) onPushesSettled(ctx, term);
    },
  });
  const sampler = new ProbeSampler({
    setter: options.setter,
    tracker,
    token: options.token,
    metrics: options.metrics,
    logger: options.logger,
    intervalMs: settings.intervalMs,
    concurrency: settings.agentCallConcurrency,
    signal,
    pushing: (name) => pushers.busy(name),
    onSkipped: () => poke(periodic),
    onSampled: () => {
      if (ctx.isCurrent(term)) poke(periodic);
    },
  });
  const term: Term = {
    controller,
    signal,
    pushers,
    spread: new IncrementalSpread(held, (kind) => options.metrics.spreadRun(kind)),
    placement: new Map(),
    keys: new Map(),
    sampler,
    status: statuses.lane(signal),
    unseenAnswers: false,
    refresh: undefined,
    advancing: undefined,
    exhausted: undefined,
    confirming: undefined,
  };
  return term;
}

/** node → pool key id → target, from what the nodes report: where the first spread of a term starts from. */
export function heldTargets(views: readonly NodeView[]): Targets {
  const targets = new Map<string, Map<string, number>>();
  for (const view of views) {
    const held = new Map<string, number>();
    for (const pool of view.observation?.pools ?? []) if (pool.target > 0) held.set(poolKeyId(pool), pool.target);
    targets.set(view.name, held);
  }
  return targets;
}
