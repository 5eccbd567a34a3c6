import type { FederationRecord } from '@warmpool/api';

/**
 * One cluster's runtime capacity for a single member pool of a SandboxEnv: the
 * federation record of `@warmpool/api`. (clusterId, namespace, envName,
 * memberPool) is its identity; the scaling group lets a router honour a
 * requested group. Same-named Envs in several clusters share only these
 * numbers, never spec.
 */
export type Capacity = FederationRecord;

/** `capacity` value meaning "autoscaling on, no finite ceiling". */
export const UNBOUNDED_HEADROOM = -1;

/** Autoscaling is on and the member is not at its ceiling (-1 counts as room). */
export function canGrow(member: Pick<Capacity, 'autoscalingEnabled' | 'capacity'>): boolean {
  return member.autoscalingEnabled && member.capacity !== 0;
}

/**
 * A create routed here is served without an open-ended wait: an idle sandbox
 * is ready now, or the member can scale up to make one. Anything else would
 * park the request until it times out.
 */
export function schedulable(member: Pick<Capacity, 'idle' | 'autoscalingEnabled' | 'capacity'>): boolean {
  return member.idle > 0 || canGrow(member);
}

/** Orders headroom so that unbounded ranks above every finite value. */
export function headroomRank(capacity: number): number {
  return capacity === UNBOUNDED_HEADROOM ? Number.POSITIVE_INFINITY : capacity;
}

/** The predicates under the type's name, so call sites read `Capacity.canGrow(c)`. */
export const Capacity = { canGrow, schedulable } as const;
