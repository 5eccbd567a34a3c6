import { headroomRank, type Capacity } from './capacity.js';

type Candidate = Pick<Capacity, 'clusterId' | 'memberPool' | 'idle' | 'capacity'>;

/**
 * Orders schedulable foreign members best first (negative: `a` is better).
 * An idle sandbox serves at once while a scale-up pays a cold start, so any
 * member with idle > 0 outranks every pure scale-up member. Within idle, more
 * idle wins; within scale-up, more headroom wins (unbounded highest). Ties
 * break on (clusterId, memberPool) ascending by code unit, never by locale, so
 * every cluster picks the same member.
 */
export function compareForeignCandidates(a: Candidate, b: Candidate): number {
  const aIdle = a.idle > 0;
  const bIdle = b.idle > 0;
  if (aIdle !== bIdle) return aIdle ? -1 : 1;
  if (aIdle) {
    if (a.idle !== b.idle) return a.idle > b.idle ? -1 : 1;
  } else {
    // Compared, not subtracted: Infinity - Infinity is NaN.
    const aRoom = headroomRank(a.capacity);
    const bRoom = headroomRank(b.capacity);
    if (aRoom !== bRoom) return aRoom > bRoom ? -1 : 1;
  }
  return compareIdentity(a, b);
}

/** (clusterId, memberPool) ascending by code unit. */
export function compareIdentity(
  a: Pick<Capacity, 'clusterId' | 'memberPool'>,
  b: Pick<Capacity, 'clusterId' | 'memberPool'>,
): number {
  if (a.clusterId !== b.clusterId) return a.clusterId < b.clusterId ? -1 : 1;
  if (a.memberPool !== b.memberPool) return a.memberPool < b.memberPool ? -1 : 1;
  return 0;
}
