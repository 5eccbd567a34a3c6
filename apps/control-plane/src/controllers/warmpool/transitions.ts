// The run's transitions told to humans: a node entering or leaving placement
// and a pool moving to a new key, as logs, Kubernetes Events and metrics. A
// verdict is given once per change, never per run.
import { NodeInventoryType, SandboxWarmPoolType } from '@warmpool/api';
import { formatDuration } from '@warmpool/runtime';
import { nodeStateOf } from '../../nodes/node-state.js';
import type { NodeView } from '../../nodes/tracker.js';
import type { DriverContext, Term } from './context.js';
import { NODE_STATES, type NodeStateLabel } from './metrics.js';
import type { PoolPlan } from './plan.js';

export function notePlacement(ctx: DriverContext, term: Term, views: readonly NodeView[]): void {
  const counts = Object.fromEntries(NODE_STATES.map((state) => [state, 0])) as Record<NodeStateLabel, number>;
  for (const view of views) {
    counts[nodeStateOf(view)]++;
    const known = term.placement.has(view.name);
    // An inventory whose agent has not written its status yet (created a moment before its first publish) says
    // nothing about the node: no verdict until it does, so its first publish is "in placement", not "back".
    if (!known && view.exclusion === 'stale' && view.observation === undefined) continue;
    const before = term.placement.get(view.name);
    term.placement.set(view.name, view.exclusion);
    if (known && before === view.exclusion) continue;
    if (view.exclusion === undefined) noteInPlacement(ctx, view, known);
    else noteOutOfPlacement(ctx, term, view, known && before === undefined);
  }
  ctx.options.metrics.nodes(counts);
}

function noteInPlacement(ctx: DriverContext, view: NodeView, known: boolean): void {
  ctx.options.logger.info(known ? 'node back in placement' : 'node in placement', {
    node: view.name,
    address: view.address,
  });
  if (known)
    nodeEvent(
      ctx,
      view.name,
      'Normal',
      'NodeInPlacement',
      `node ${view.name} is healthy again and takes its share of the warm pools`,
    );
}

function noteOutOfPlacement(ctx: DriverContext, term: Term, view: NodeView, wasPlaced: boolean): void {
  const why = exclusionMessage(ctx, view);
  ctx.options.logger.warn('node out of placement', {
    node: view.name,
    address: view.address,
    reason: view.exclusion,
    why,
  });
  if (view.exclusion === 'unverified-address') {
    // A push still queued for it (to an address vouched for when queued, no longer) is not sent.
    term.pushers.forget(view.name);
    // Also for a node never placed: an inventory pointing elsewhere is worth a look (a forged one, or a
    // misconfigured agent).
    nodeEvent(
      ctx,
      view.name,
      'Warning',
      'AddressNotOfNode',
      `${why}; warmpool does not call this agent until its address is one of its node's`,
    );
  } else if ((wasPlaced || view.exclusion === 'impossible-generation') && ctx.leadership.holding()) {
    // A forged generation gets its Event even at a term's first look: it needs a human. A leader past its
    // renew deadline may be seeing its successor's generations, so it accuses no node.
    nodeEvent(
      ctx,
      view.name,
      'Warning',
      'NodeLeftPlacement',
      `${why}; its share of the warm pools moves to other nodes`,
    );
  }
}

function exclusionMessage(ctx: DriverContext, view: NodeView): string {
  switch (view.exclusion) {
    case 'stale':
      return `NodeInventory ${view.name} has not been republished for over ${formatDuration(ctx.settings.staleAfterMs)}`;
    case 'failing':
      return `the agent of ${view.name} at ${view.address} failed ${view.failures} calls in a row (${view.lastError ?? 'unknown error'})`;
    case 'draining':
      return `node ${view.name} is draining`;
    case 'no-address':
      return `NodeInventory ${view.name} has no usable spec.address (${JSON.stringify(view.address)})`;
    case 'impossible-generation':
      return [
        `node ${view.name} reports applied generation ${view.appliedGeneration},`,
        `above any generation a leader has issued (${ctx.options.generations.highestIssued}):`,
        'forged or corrupted, so its agent would refuse every push;',
        'to recover it (control-plane README, "A node with an impossible generation"):',
        `\`kubectl annotate nodeinventory ${view.name}`,
        `warmpool.dev/reset-applied-generation=${view.appliedGeneration} --overwrite\`, then restart the node agent`,
        `on ${view.name}`,
      ].join(' ');
    case 'unverified-address':
      return `NodeInventory ${view.name} points at ${view.address}, which is not its node's: ${view.addressProblem ?? 'unknown'}`;
    case undefined:
      return '';
  }
}

function nodeEvent(
  ctx: DriverContext,
  name: string,
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
): void {
  const inventory = ctx.options.inventories.get(name);
  if (inventory === undefined) return;
  ctx.options.events.record(inventory, NodeInventoryType, type, reason, message);
  ctx.options.metrics.event(reason);
}

export function noteKeyChanges(ctx: DriverContext, term: Term, plans: readonly PoolPlan[]): void {
  const { logger, events, metrics } = ctx.options;
  const seen = new Set<string>();
  for (const plan of plans) {
    if (plan.kind !== 'driven') continue;
    const uid = plan.pool.metadata?.uid ?? plan.ref;
    seen.add(uid);
    const before = term.keys.get(uid);
    term.keys.set(uid, plan.keyId);
    if (before === undefined || before === plan.keyId) continue;
    const message = `pool key changed from ${before} to ${plan.keyId}: the new key fills, the old one drains on every node`;
    logger.info('pool moved to a new key', { pool: plan.ref, from: before, to: plan.keyId });
    events.record(plan.pool, SandboxWarmPoolType, 'Normal', 'PoolKeyChanged', message);
    metrics.event('PoolKeyChanged');
  }
  for (const uid of term.keys.keys()) if (!seen.has(uid)) term.keys.delete(uid);
}
