// The status each pool should have, from the plans, the spread and what the
// nodes report (pool-model's observePools sums those); its two conditions,
// Ready (are the placed replicas warm?) and Degraded (could every replica be
// placed?); and the Events their transitions deserve. Pure. This is the one
// place a SandboxWarmPool's status is decided.
//
// Pools whose templates name the same sandboxd key share one node-level pool.
// The key's counts are handed out in ref order: each pool takes up to its own
// replicas, the last one takes what is left (so a lone pool shows exactly what
// the nodes report, a scale-down still in flight included).
import { POOL_LABEL, type Condition, type SandboxWarmPoolStatus } from '@warmpool/api';
import { replicasOf, type PoolObservation } from '@warmpool/pool-model';
import { transitionTimeOf } from '../conditions.js';
import type { PoolPlan } from './plan.js';

export const READY = 'Ready';
export const DEGRADED = 'Degraded';

export const REASONS = {
  allWarm: 'AllReplicasWarm',
  filling: 'Filling',
  scaledToZero: 'ScaledToZero',
  templateNotFound: 'TemplateNotFound',
  invalidTemplate: 'InvalidTemplate',
  allPlaced: 'AllPlaced',
  noEligibleNodes: 'NoEligibleNodes',
  insufficientRoom: 'InsufficientRoom',
} as const;

export interface StatusInputs {
  plans: readonly PoolPlan[];
  /** Per pool key id: what the eligible nodes report. */
  observed: ReadonlyMap<string, PoolObservation>;
  /** Per pool key id: replicas the spread placed / could not place. */
  placed: ReadonlyMap<string, number>;
  unplaced: ReadonlyMap<string, number>;
  eligibleNodes: number;
}

export interface PoolStatusPlan {
  plan: PoolPlan;
  /** Conditions without lastTransitionTime: see withTransitionTimes(). */
  status: SandboxWarmPoolStatus;
  /** Replicas of this pool that found no room. */
  unplaced: number;
}

export function selectorOf(poolName: string): string {
  return `${POOL_LABEL}=${poolName}`;
}

/**
 * What the last run decided, per key group and per problem plan: a group whose plans are the same objects and whose
 * counts hold keeps its statuses (the same objects), so a run builds statuses only for the pools an event moved.
 */
export class StatusMemo {
  readonly groups = new Map<string, GroupMemo>();
  readonly problems = new Map<PoolPlan, PoolStatusPlan>();
}

interface GroupMemo {
  plans: ReadonlyArray<PoolPlan & { kind: 'driven' }>;
  replicas: number;
  ready: number;
  placed: number;
  eligibleNodes: number;
  out: PoolStatusPlan[];
}

/** The would-be status of every planned pool, keyed by ref; with `memo`, what held since the last run is reused. */
export function statusesOf(inputs: StatusInputs, memo?: StatusMemo): Map<string, PoolStatusPlan> {
  const out = new Map<string, PoolStatusPlan>();
  const byKey = new Map<string, Array<PoolPlan & { kind: 'driven' }>>();
  const problems = new Map<PoolPlan, PoolStatusPlan>();
  for (const plan of inputs.plans) {
    if (plan.kind === 'driven') {
      const group = byKey.get(plan.keyId);
      if (group === undefined) byKey.set(plan.keyId, [plan]);
      else group.push(plan);
      continue;
    }
    const status = memo?.problems.get(plan) ?? problemStatus(plan);
    problems.set(plan, status);
    out.set(plan.ref, status);
  }
  const groups = new Map<string, GroupMemo>();
  for (const [keyId, group] of byKey) {
    const observation = inputs.observed.get(keyId);
    const counts = {
      replicas: observation?.replicas ?? 0,
      ready: observation?.readyReplicas ?? 0,
      placed: inputs.placed.get(keyId) ?? 0,
      eligibleNodes: inputs.eligibleNodes,
    };
    const before = memo?.groups.get(keyId);
    const kept = before !== undefined && sameGroup(before, group, counts) ? before : undefined;
    const made = kept ?? { plans: group, ...counts, out: groupStatuses(group, counts) };
    groups.set(keyId, made);
    for (const status of made.out) out.set(status.plan.ref, status);
  }
  if (memo !== undefined) {
    memo.groups.clear();
    for (const [keyId, group] of groups) memo.groups.set(keyId, group);
    memo.problems.clear();
    for (const [plan, status] of problems) memo.problems.set(plan, status);
  }
  return out;
}

type GroupCounts = Omit<GroupMemo, 'plans' | 'out'>;

function sameGroup(memo: GroupMemo, group: ReadonlyArray<PoolPlan>, counts: GroupCounts): boolean {
  if (
    memo.replicas !== counts.replicas ||
    memo.ready !== counts.ready ||
    memo.placed !== counts.placed ||
    memo.eligibleNodes !== counts.eligibleNodes ||
    memo.plans.length !== group.length
  )
    return false;
  return group.every((plan, i) => memo.plans[i] === plan);
}

/** The key's counts handed out in ref order: each pool takes up to its own replicas, the last one what is left. */
function groupStatuses(group: ReadonlyArray<PoolPlan & { kind: 'driven' }>, counts: GroupCounts): PoolStatusPlan[] {
  let replicasLeft = counts.replicas;
  let readyLeft = counts.ready;
  let placedLeft = counts.placed;
  return group.map((plan, i) => {
    const last = i === group.length - 1;
    const replicas = last ? replicasLeft : Math.min(plan.replicas, replicasLeft);
    replicasLeft -= replicas;
    const ready = Math.min(replicas, readyLeft, plan.replicas);
    readyLeft -= ready;
    const placed = Math.min(plan.replicas, placedLeft);
    placedLeft -= placed;
    const unplaced = plan.replicas - placed;
    return drivenStatus(plan, replicas, ready, unplaced, counts.eligibleNodes);
  });
}

function drivenStatus(
  plan: PoolPlan & { kind: 'driven' },
  replicas: number,
  ready: number,
  unplaced: number,
  eligibleNodes: number,
): PoolStatusPlan {
  const generation = plan.pool.metadata?.generation;
  const observedGeneration = generation === undefined ? {} : { observedGeneration: generation };
  const desired = plan.replicas;
  let readyCondition: Condition;
  if (desired === 0) {
    readyCondition = {
      type: READY,
      status: 'True',
      reason: REASONS.scaledToZero,
      message: 'the pool is scaled to 0 replicas',
      ...observedGeneration,
    };
  } else if (ready >= desired) {
    readyCondition = {
      type: READY,
      status: 'True',
      reason: REASONS.allWarm,
      message: `${ready} of ${desired} replicas are warm`,
      ...observedGeneration,
    };
  } else {
    const placement = unplaced > 0 ? `; ${unplaced} cannot be placed` : '';
    readyCondition = {
      type: READY,
      status: 'False',
      reason: REASONS.filling,
      message: `${ready} of ${desired} replicas are warm${placement}`,
      ...observedGeneration,
    };
  }
  const degraded = degradedCondition(desired, unplaced, eligibleNodes, observedGeneration);
  const status: SandboxWarmPoolStatus = {
    replicas,
    readyReplicas: ready,
    selector: selectorOf(plan.pool.metadata?.name ?? ''),
    ...observedGeneration,
    conditions: [readyCondition, degraded],
  };
  return { plan, status, unplaced };
}

/** Degraded, from the spread's unplaced count: True while some replica found no node. */
function degradedCondition(
  desired: number,
  unplaced: number,
  eligibleNodes: number,
  observedGeneration: { observedGeneration?: number },
): Condition {
  if (unplaced <= 0) {
    return {
      type: DEGRADED,
      status: 'False',
      reason: REASONS.allPlaced,
      message: `all ${desired} replicas are placed on nodes`,
      ...observedGeneration,
    };
  }
  const why =
    eligibleNodes === 0
      ? ([REASONS.noEligibleNodes, 'no node is eligible (all draining, stale or absent)'] as const)
      : ([REASONS.insufficientRoom, 'every eligible node is out of room'] as const);
  return {
    type: DEGRADED,
    status: 'True',
    reason: why[0],
    message: `${unplaced} of ${desired} replicas are not placed: ${why[1]}`,
    ...observedGeneration,
  };
}

function problemStatus(plan: PoolPlan & { kind: 'template-missing' | 'invalid-template' }): PoolStatusPlan {
  const generation = plan.pool.metadata?.generation;
  const observedGeneration = generation === undefined ? {} : { observedGeneration: generation };
  const [reason, message] =
    plan.kind === 'template-missing'
      ? [REASONS.templateNotFound, `SandboxTemplate ${plan.template} not found: nothing is kept warm for this pool`]
      : [REASONS.invalidTemplate, `${plan.message}: nothing is kept warm for this pool`];
  const conditions: Condition[] = [
    { type: READY, status: 'False', reason, message, ...observedGeneration },
    { type: DEGRADED, status: 'True', reason, message, ...observedGeneration },
  ];
  // A missing template may be upstream's pool as much as ours: claim nothing but the conditions.
  const status: SandboxWarmPoolStatus =
    plan.kind === 'template-missing'
      ? { conditions }
      : {
          replicas: 0,
          readyReplicas: 0,
          selector: selectorOf(plan.pool.metadata?.name ?? ''),
          ...observedGeneration,
          conditions,
        };
  return { plan, status, unplaced: plan.kind === 'invalid-template' ? replicasOf(plan.pool) : 0 };
}

/**
 * Sets each condition's lastTransitionTime: kept from `previous` when the
 * condition's status did not change, else `now`.
 */
export function withTransitionTimes(
  status: SandboxWarmPoolStatus,
  previous: SandboxWarmPoolStatus | undefined,
  now: number,
): SandboxWarmPoolStatus {
  if (status.conditions === undefined) return status;
  const before = new Map((previous?.conditions ?? []).map((c) => [c.type, c]));
  const conditions = status.conditions.map((c) => ({
    ...c,
    lastTransitionTime: transitionTimeOf(before.get(c.type), c.status, now),
  }));
  return { ...status, conditions };
}

/** A canonical string of the fields warmpool writes, for diffing would-be against current. */
export function statusSig(status: SandboxWarmPoolStatus | undefined): string {
  if (status === undefined) return '';
  const conditions = [...(status.conditions ?? [])]
    .sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0))
    .map((c) => [
      c.type,
      c.status,
      c.reason ?? '',
      c.message ?? '',
      c.observedGeneration ?? null,
      c.lastTransitionTime ?? '',
    ]);
  return JSON.stringify([
    status.replicas ?? null,
    status.readyReplicas ?? null,
    status.selector ?? null,
    status.observedGeneration ?? null,
    conditions,
  ]);
}

export interface PoolEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

/**
 * The Events a change from `previous` to `next` deserves: Ready turning true, Degraded turning (or changing) true, and
 * back.
 */
export function transitionEvents(
  previous: SandboxWarmPoolStatus | undefined,
  next: SandboxWarmPoolStatus,
): PoolEvent[] {
  const events: PoolEvent[] = [];
  const before = new Map((previous?.conditions ?? []).map((c) => [c.type, c]));
  for (const condition of next.conditions ?? []) {
    const old = before.get(condition.type);
    const message = condition.message ?? '';
    if (condition.type === READY) {
      if (condition.status === 'True' && old?.status !== 'True')
        events.push({ type: 'Normal', reason: 'PoolReady', message });
    } else if (condition.type === DEGRADED) {
      if (
        condition.status === 'True' &&
        (old?.status !== 'True' || old.reason !== condition.reason || old.message !== condition.message)
      ) {
        events.push({ type: 'Warning', reason: condition.reason ?? DEGRADED, message });
      } else if (condition.status === 'False' && old?.status === 'True') {
        events.push({ type: 'Normal', reason: REASONS.allPlaced, message });
      }
    }
  }
  return events;
}
