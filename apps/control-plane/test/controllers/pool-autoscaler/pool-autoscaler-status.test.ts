// The SandboxWarmPoolAutoscaler's status as the controller writes it (pure):
// conditions as the HPA has them, transition times kept while a status holds,
// and writes only when something a reader acts on moved.
import type { PoolAutoscalerStatus, SandboxWarmPoolAutoscaler } from '@warmpool/api';
import type { DemandDecision } from '@warmpool/demand';
import { describe, expect, it } from 'vitest';
import { statusOf, worthWriting } from '../../../src/controllers/pool-autoscaler/status.js';

const NOW = Date.UTC(2030, 0, 1, 12);

function autoscaler(status?: PoolAutoscalerStatus): SandboxWarmPoolAutoscaler {
  return {
    apiVersion: 'warmpool.dev/v1alpha1',
    kind: 'SandboxWarmPoolAutoscaler',
    metadata: { namespace: 'ns', name: 'a', generation: 3 },
    spec: { scaleTargetRef: { kind: 'SandboxWarmPool', name: 'p' }, maxReplicas: 10 },
    ...(status !== undefined ? { status } : {}),
  };
}

const decision = (over: Partial<DemandDecision> = {}): DemandDecision => ({
  replicas: 7,
  recommended: 5,
  claimRate: 2.34567,
  burst: false,
  leadTimeSeconds: 2.0412,
  leadTimeObserved: true,
  hitRatio: 0.991234,
  reason: 'StabilizingScaleDown',
  message: 'holding 7 (5 recommended)',
  ...over,
});

describe('pool autoscaler status', () => {
  it('carries the numbers, rounded, and the two conditions', () => {
    const status = statusOf(
      autoscaler(),
      { able: { ok: true, reason: 'ReadyForNewScale' }, decision: decision(), currentReplicas: 7 },
      NOW,
    );
    expect(status).toMatchObject({
      observedGeneration: 3,
      currentReplicas: 7,
      desiredReplicas: 7,
      recommendedReplicas: 5,
      claimRate: 2.346,
      leadTimeSeconds: 2.04,
      observedHitRatio: 0.9912,
    });
    expect(status.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['AbleToScale', 'True', 'ReadyForNewScale'],
      ['ScalingActive', 'True', 'StabilizingScaleDown'],
    ]);
  });

  it('says why it cannot act, without numbers, when the target is missing', () => {
    const status = statusOf(
      autoscaler(),
      { able: { ok: false, reason: 'TargetNotFound', message: 'SandboxWarmPool ns/p not found' } },
      NOW,
    );
    expect(status.desiredReplicas).toBeUndefined();
    expect(status.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['AbleToScale', 'False', 'TargetNotFound'],
      ['ScalingActive', 'False', 'TargetNotFound'],
    ]);
  });

  it('keeps a condition’s lastTransitionTime while its status holds', () => {
    const first = statusOf(autoscaler(), { able: { ok: true, reason: 'ReadyForNewScale' }, decision: decision() }, NOW);
    const later = statusOf(
      autoscaler(first),
      { able: { ok: true, reason: 'SucceededRescale' }, decision: decision({ reason: 'ScaledUp' }) },
      NOW + 60_000,
    );
    expect(later.conditions?.[0]?.lastTransitionTime).toBe(first.conditions?.[0]?.lastTransitionTime);
  });

  it('writes at once when replicas or a reason move, the measured numbers only every refresh', () => {
    const base = statusOf(autoscaler(), { able: { ok: true, reason: 'ReadyForNewScale' }, decision: decision() }, NOW);
    const numbers = statusOf(
      autoscaler(),
      { able: { ok: true, reason: 'ReadyForNewScale' }, decision: decision({ claimRate: 3 }) },
      NOW,
    );
    const raised = statusOf(
      autoscaler(),
      { able: { ok: true, reason: 'SucceededRescale' }, decision: decision({ replicas: 9, reason: 'ScaledUp' }) },
      NOW,
    );
    expect(worthWriting(undefined, base, 0, 15_000)).toBe(true);
    expect(worthWriting(base, base, 60_000, 15_000)).toBe(false);
    expect(worthWriting(base, numbers, 1_000, 15_000)).toBe(false);
    expect(worthWriting(base, numbers, 15_000, 15_000)).toBe(true);
    expect(worthWriting(base, raised, 0, 15_000)).toBe(true);
  });
});
