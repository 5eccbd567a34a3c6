// A run's would-be statuses and the pool metrics: computed from the plans, the
// spread and what the counting nodes report, then handed to the term's status
// lane, which writes them behind the run's back (status-queue.ts); only the
// latest batch is kept, compared with what is current when the lane gets to it.
import type { Spread } from '@warmpool/pool-model';
import type { NodeView } from '../../nodes/tracker.js';
import type { Term } from './context.js';
import type { PoolState, WarmPoolMetrics } from './metrics.js';
import type { ObservedPools } from './observed.js';
import type { PoolPlan } from './plan.js';
import { statusesOf, type StatusMemo } from './status.js';

export interface StatusInputs {
  plans: readonly PoolPlan[];
  views: readonly NodeView[];
  result: Spread;
  now: number;
  /** The periodic resync: the status lane compares every status afresh. */
  full: boolean;
}

/** What a run keeps for the next: the summed observations and the statuses that held. */
export interface StatusMemos {
  observed: ObservedPools;
  statuses: StatusMemo;
}

export function handOverStatuses(
  term: Term,
  memos: StatusMemos,
  metrics: WarmPoolMetrics,
  { plans, views, result, now, full }: StatusInputs,
): void {
  let eligibleNodes = 0;
  for (const view of views) if (view.eligible) eligibleNodes++;
  const statuses = statusesOf(
    {
      plans,
      observed: memos.observed.update(views),
      placed: result.placed,
      unplaced: result.unplaced,
      eligibleNodes,
    },
    memos.statuses,
  );

  const poolCounts: Record<PoolState, number> = { driven: 0, template_missing: 0, invalid_template: 0 };
  let degraded = 0;
  for (const { plan, unplaced } of statuses.values()) {
    poolCounts[
      plan.kind === 'driven' ? 'driven' : plan.kind === 'template-missing' ? 'template_missing' : 'invalid_template'
    ]++;
    if (plan.kind === 'driven' && unplaced > 0) degraded++;
  }
  let unplacedTotal = 0;
  for (const count of result.unplaced.values()) unplacedTotal += count;
  metrics.pools(poolCounts);
  metrics.placement(unplacedTotal, degraded);
  metrics.poolReplicas(
    [...statuses.values()].map(({ plan, status }) => ({
      ref: plan.ref,
      ready: status.readyReplicas ?? 0,
      desired: plan.kind === 'driven' ? plan.replicas : 0,
    })),
  );

  term.status.submit({ statuses: [...statuses.values()], now, full });
}
