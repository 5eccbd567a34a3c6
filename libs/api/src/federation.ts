// The federation record (docs/federation.md, "The record"): one per (cluster,
// namespace, env, member pool), shared through the Redis hub, never
// through etcd. Written once here: the Redis transport validates what it reads
// with the schema, the registry core holds it, SandboxEnv status mirrors it.
import { z } from 'zod';

export const federationRecordSchema = z.object({
  clusterId: z.string().min(1),
  namespace: z.string().min(1),
  envName: z.string().min(1),
  /** A SandboxWarmPool name in the Env's namespace, in the owning cluster. */
  memberPool: z.string().min(1),
  scalingGroup: z.string(),
  idle: z.number().int().min(0),
  running: z.number().int().min(0),
  pending: z.number().int().min(0),
  desired: z.number().int().min(0),
  /** Whether the member's scaling group autoscales in its owning cluster. */
  autoscalingEnabled: z.boolean(),
  /**
   * Scale-up headroom, meaningful with autoscaling on: -1 unbounded, 0 at the ceiling, > 0 that many replicas of room.
   */
  capacity: z.number().int().min(-1),
  /** Remaining saturation window; 0 when not saturated. */
  saturatedForMs: z.number().min(0),
});
export type FederationRecord = z.output<typeof federationRecordSchema>;

/** Published on the hint channel after a report that changed records: which cluster just wrote. */
export const federationHintSchema = z.object({ clusterId: z.string().min(1) });
export type FederationHint = z.output<typeof federationHintSchema>;
