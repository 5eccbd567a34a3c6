// SandboxWarmPoolAutoscaler (warmpool.dev/v1alpha1, namespaced): sizes one
// SandboxWarmPool from its claim demand, as an HPA sizes a Deployment, through
// the pool's scale subresource (upstream's SandboxWarmPool spec is not ours to
// change). The schema the apiserver enforces is in
// charts/warmpool/files/crds/warmpool.dev_sandboxwarmpoolautoscalers.yaml and
// must agree with this one; the controller parses every object it reads with
// it, so an object the CRD schema let through but this refuses is reported on
// its own status and never acted on. The model: docs/autoscaling.md.
import { z } from 'zod';
import { WARMPOOL_GROUP, WARMPOOL_VERSION } from './crds.js';
import type { Condition, KubeObject, ObjectMeta, ResourceType } from './meta.js';

export const SandboxWarmPoolAutoscalerType: ResourceType = {
  group: WARMPOOL_GROUP,
  version: WARMPOOL_VERSION,
  plural: 'sandboxwarmpoolautoscalers',
  kind: 'SandboxWarmPoolAutoscaler',
  namespaced: true,
};

export const POOL_AUTOSCALER_DEFAULTS = {
  minReplicas: 1,
  targetHitRatio: 0.99,
  claimWindowSeconds: 30,
  scaleDownStabilizationWindowSeconds: 300,
} as const;

const seconds = (max: number): z.ZodInt => z.int().min(0).max(max);

export const poolAutoscalerSpecSchema = z
  .object({
    /** The SandboxWarmPool to size, in the autoscaler's namespace. */
    scaleTargetRef: z.object({
      apiVersion: z.string().optional(),
      kind: z.literal('SandboxWarmPool'),
      name: z.string().min(1).max(253),
    }),
    minReplicas: z.int().min(0).default(POOL_AUTOSCALER_DEFAULTS.minReplicas),
    maxReplicas: z.int().min(1),
    /** The share of claims to serve warm. */
    targetHitRatio: z.number().gt(0).lt(1).default(POOL_AUTOSCALER_DEFAULTS.targetHitRatio),
    /** The claim rate is measured over this window; a burst shows at the next step regardless. */
    claimWindowSeconds: seconds(3_600).min(1).default(POOL_AUTOSCALER_DEFAULTS.claimWindowSeconds),
    behavior: z
      .object({
        scaleDown: z
          .object({
            /** A cut applies only to the highest recommendation of this window. */
            stabilizationWindowSeconds: seconds(3_600).default(
              POOL_AUTOSCALER_DEFAULTS.scaleDownStabilizationWindowSeconds,
            ),
          })
          .default({ stabilizationWindowSeconds: POOL_AUTOSCALER_DEFAULTS.scaleDownStabilizationWindowSeconds }),
      })
      .default({
        scaleDown: { stabilizationWindowSeconds: POOL_AUTOSCALER_DEFAULTS.scaleDownStabilizationWindowSeconds },
      }),
  })
  .refine((spec) => spec.minReplicas <= spec.maxReplicas, {
    message: 'minReplicas must not exceed maxReplicas',
    path: ['minReplicas'],
  });

/** The spec as written (defaults optional). */
export type PoolAutoscalerSpec = z.input<typeof poolAutoscalerSpecSchema>;
/** The spec with defaults applied, as the controller acts on it. */
export type ResolvedPoolAutoscalerSpec = z.output<typeof poolAutoscalerSpecSchema>;

export interface PoolAutoscalerStatus {
  observedGeneration?: number;
  /** The target's spec.replicas when last read. */
  currentReplicas?: number;
  /** What the autoscaler set (or holds). */
  desiredReplicas?: number;
  /** The model's replicas before scale-down stabilisation. */
  recommendedReplicas?: number;
  /** Claims per second over the claim window (or the latest burst). */
  claimRate?: number;
  /** The refill lead time in use, seconds. */
  leadTimeSeconds?: number;
  /** Warm / all claims over the stabilisation window (at least the claim window); absent without claims. */
  observedHitRatio?: number;
  /** RFC 3339: the last replicas change. */
  lastScaleTime?: string;
  /** AbleToScale (the target exists and takes writes), ScalingActive (reason: why this many). */
  conditions?: Condition[];
}

export interface SandboxWarmPoolAutoscaler extends KubeObject {
  metadata: ObjectMeta;
  spec: PoolAutoscalerSpec;
  status?: PoolAutoscalerStatus;
}
