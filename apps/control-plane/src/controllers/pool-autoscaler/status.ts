// A SandboxWarmPoolAutoscaler's status from one step, and whether it is worth
// a write. Pure. Conditions follow the HPA's: AbleToScale (the target exists
// and took the last write) and ScalingActive (the reason for this many).
import type { Condition, PoolAutoscalerStatus, SandboxWarmPoolAutoscaler } from '@warmpool/api';
import type { DemandDecision } from '@warmpool/demand';
import { transitionTimeOf } from '../conditions.js';

export type AbleToScale =
  | { ok: true; reason: 'ReadyForNewScale' | 'SucceededRescale' }
  | { ok: false; reason: 'TargetNotFound' | 'FailedUpdateScale' | 'InvalidSpec'; message: string };

export interface StepOutcome {
  able: AbleToScale;
  /** Absent when no step ran (invalid spec, no target). */
  decision?: DemandDecision;
  currentReplicas?: number;
  /** RFC 3339 of the last replicas change, when there was one. */
  lastScaleTime?: string;
}

const round = (value: number, digits: number): number => Number(value.toFixed(digits));

export function statusOf(
  autoscaler: SandboxWarmPoolAutoscaler,
  outcome: StepOutcome,
  now: number,
): PoolAutoscalerStatus {
  const previous = autoscaler.status?.conditions ?? [];
  const generation = autoscaler.metadata?.generation;
  const condition = (type: string, status: Condition['status'], reason: string, message: string): Condition => ({
    type,
    status,
    reason,
    message,
    lastTransitionTime: transitionTimeOf(
      previous.find((c) => c.type === type),
      status,
      now,
    ),
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
  });
  const { able, decision } = outcome;
  const conditions = [
    able.ok
      ? condition('AbleToScale', 'True', able.reason, 'the target pool takes scale writes')
      : condition('AbleToScale', 'False', able.reason, able.message),
    decision === undefined
      ? condition('ScalingActive', 'False', able.reason, able.ok ? 'no step yet' : able.message)
      : condition('ScalingActive', 'True', decision.reason, decision.message),
  ];
  const status: PoolAutoscalerStatus = {
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    ...(outcome.currentReplicas !== undefined ? { currentReplicas: outcome.currentReplicas } : {}),
    conditions,
  };
  if (decision !== undefined) {
    status.desiredReplicas = decision.replicas;
    status.recommendedReplicas = decision.recommended;
    status.claimRate = round(decision.claimRate, 3);
    status.leadTimeSeconds = round(decision.leadTimeSeconds, 2);
    if (decision.hitRatio !== undefined) status.observedHitRatio = round(decision.hitRatio, 4);
  }
  const lastScaleTime = outcome.lastScaleTime ?? autoscaler.status?.lastScaleTime;
  if (lastScaleTime !== undefined) status.lastScaleTime = lastScaleTime;
  return status;
}

/**
 * Whether to write: at once when replicas, a condition's status or reason, or
 * the generation moved; the measured numbers (rate, lead time, hit ratio) at
 * most every `refreshMs`, so a busy pool does not write its status every step.
 */
export function worthWriting(
  written: PoolAutoscalerStatus | undefined,
  next: PoolAutoscalerStatus,
  sinceWriteMs: number,
  refreshMs: number,
): boolean {
  if (written === undefined) return true;
  const key = (s: PoolAutoscalerStatus): string =>
    JSON.stringify([
      s.observedGeneration,
      s.currentReplicas,
      s.desiredReplicas,
      s.lastScaleTime,
      (s.conditions ?? []).map((c) => [c.type, c.status, c.reason]),
    ]);
  if (key(written) !== key(next)) return true;
  const numbers = (s: PoolAutoscalerStatus): string =>
    JSON.stringify([s.recommendedReplicas, s.claimRate, s.leadTimeSeconds, s.observedHitRatio]);
  return sinceWriteMs >= refreshMs && numbers(written) !== numbers(next);
}
