// A SandboxEnv's status rows and its federation records, from its member
// pools' counts (see counts.ts). Pure, O(members).
//
// Per scaling group: idle / running / pending / desired summed over its member
// pools; `capacity` is the autoscaling headroom: -1 unbounded (autoscaling on,
// no maxReplicas), 0 at the ceiling (or autoscaling off), > 0 that many
// replicas of room below maxReplicas (which bounds the group's total). The
// whole-Env row is the group `""`.
import type { FederationRecord, SandboxEnv, SandboxEnvAutoscaling, ScalingGroupStatus } from '@warmpool/api';
import { refOf, type PoolCounts } from './counts.js';

/** `ScalingGroupStatus` plus the saturation in ms (the status shows it as a duration). */
export interface GroupRow extends Omit<ScalingGroupStatus, 'saturatedFor'> {
  saturatedForMs: number;
}

export interface EnvCapacity {
  /** Sorted by name; the whole-Env row `""` first. */
  groups: GroupRow[];
  /** One per member pool that exists, without the cluster id (the reporter adds it). */
  records: Array<Omit<FederationRecord, 'clusterId'>>;
}

/** Tells for how long a group has been saturated (at its ceiling with no idle sandbox); 0 when it is not. */
export type SaturationClock = (key: string, saturated: boolean) => number;

export function autoscalingOf(env: SandboxEnv, group: string): SandboxEnvAutoscaling | undefined {
  return env.spec?.autoscaling?.find((a) => a.scalingGroup === group && a.enabled);
}

export function envCapacity(
  env: SandboxEnv,
  counts: ReadonlyMap<string, PoolCounts>,
  saturation: SaturationClock,
): EnvCapacity {
  const namespace = env.metadata?.namespace ?? '';
  const envName = env.metadata?.name ?? '';
  const members = new Map<string, Array<{ pool: string; counts: PoolCounts | undefined }>>();
  for (const member of env.spec?.members ?? []) {
    const list = members.get(member.scalingGroup) ?? [];
    list.push({ pool: member.pool, counts: counts.get(refOf(namespace, member.pool)) });
    members.set(member.scalingGroup, list);
  }
  const groups: GroupRow[] = [];
  const records: EnvCapacity['records'] = [];
  for (const name of [...members.keys()].sort()) {
    const list = members.get(name) ?? [];
    const row = sumOf(
      name,
      list.map((m) => m.counts),
    );
    const autoscaling = autoscalingOf(env, name);
    row.autoscalingEnabled = autoscaling !== undefined;
    row.capacity =
      autoscaling === undefined
        ? 0
        : autoscaling.maxReplicas === undefined
          ? -1
          : Math.max(0, autoscaling.maxReplicas - row.desired);
    row.saturatedForMs = saturation(
      `${namespace}/${envName}/${name}`,
      row.autoscalingEnabled && row.capacity === 0 && row.idle === 0,
    );
    groups.push(row);
    for (const member of list) {
      if (member.counts === undefined) continue; // no such pool: nothing to claim from it
      records.push({
        namespace,
        envName,
        memberPool: member.pool,
        scalingGroup: name,
        ...member.counts,
        autoscalingEnabled: row.autoscalingEnabled,
        capacity: row.capacity,
        saturatedForMs: row.saturatedForMs,
      });
    }
  }
  const whole = sumOf('', groups);
  whole.autoscalingEnabled = groups.some((g) => g.autoscalingEnabled);
  const growing = groups.filter((g) => g.autoscalingEnabled);
  whole.capacity = growing.some((g) => g.capacity === -1) ? -1 : growing.reduce((n, g) => n + g.capacity, 0);
  // The Env is saturated only while every group is; for as long as the most recent of them.
  whole.saturatedForMs =
    groups.length > 0 && groups.every((g) => g.saturatedForMs > 0)
      ? Math.min(...groups.map((g) => g.saturatedForMs))
      : 0;
  return { groups: [whole, ...groups], records };
}

function sumOf(
  name: string,
  rows: ReadonlyArray<Pick<PoolCounts, 'idle' | 'running' | 'pending' | 'desired'> | undefined>,
): GroupRow {
  const row: GroupRow = {
    name,
    idle: 0,
    running: 0,
    pending: 0,
    desired: 0,
    autoscalingEnabled: false,
    capacity: 0,
    saturatedForMs: 0,
  };
  for (const r of rows) {
    if (r === undefined) continue;
    row.idle += r.idle;
    row.running += r.running;
    row.pending += r.pending;
    row.desired += r.desired;
  }
  return row;
}

/**
 * The status rows as written. saturatedFor moves in steps (10 s under a
 * minute, then whole minutes), so a saturated Env is not rewritten at every
 * reconcile just because the clock moved.
 */
export function statusRows(groups: readonly GroupRow[]): ScalingGroupStatus[] {
  return groups.map(({ saturatedForMs, ...row }) =>
    saturatedForMs > 0 ? { ...row, saturatedFor: coarseDuration(saturatedForMs) } : row,
  );
}

export function coarseDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < 60) return `${Math.floor(seconds / 10) * 10}s`;
  return `${Math.floor(seconds / 60)}m`;
}

/** Saturation windows, remembered per group key while the group stays saturated. */
export class SaturationTracker {
  readonly #since = new Map<string, number>();
  #seen = new Set<string>();

  /** For `envCapacity`: `now` is this run's clock reading. */
  clock(now: number): SaturationClock {
    return (key, saturated) => {
      this.#seen.add(key);
      if (!saturated) {
        this.#since.delete(key);
        return 0;
      }
      const since = this.#since.get(key) ?? now;
      this.#since.set(key, since);
      // At least 1 ms, so "saturated just now" is not read as "not saturated".
      return Math.max(1, now - since);
    };
  }

  /** Forgets groups not looked at since the last sweep (their Env or group went away). */
  sweep(): void {
    for (const key of this.#since.keys()) if (!this.#seen.has(key)) this.#since.delete(key);
    this.#seen = new Set();
  }
}
