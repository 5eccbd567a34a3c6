// The Env autoscaler (leader-only): for each scaling group with autoscaling
// enabled, scales its member pools through the SandboxWarmPool scale
// subresource so that idle stays near targetIdle within [minReplicas,
// maxReplicas] (bounds on the group's total replicas).
//
// - Up: when idle + pending + unapplied (warm, booting, and replicas the
//   nodes have not taken on yet) is below targetIdle plus the sandboxes
//   claimed since the last run (the claim rate over one interval), by the
//   shortfall, capped at maxReplicas. Counting what is already on its way is
//   what keeps one shortfall from raising the pools again at every run; and
//   since the inventory shows a new boot only at its next publish, for
//   scaleUpCooldownMs after a raise only new claims raise again.
// - Down: only when idle exceeds targetIdle by more than the band (half of
//   targetIdle, at least 1) and no scale-up happened for scaleDownDelayMs:
//   hysteresis, so a group does not flap between two sizes.
// - At maxReplicas with idle 0 the group is saturated: the status says so
//   (saturatedFor) and nothing is raised.
// New replicas go to the member with the fewest; removed ones come from the
// member with the most.
import { SandboxWarmPoolType, type SandboxEnv, type SandboxWarmPool } from '@warmpool/api';
import { ResourceClient, type KubeConfig } from '@warmpool/kube';
import type { Logger, Clock } from '@warmpool/runtime';
import { refOf, type PoolCounts } from './counts.js';
import { autoscalingOf, type EnvCapacity } from './status.js';

export const AUTOSCALER_DEFAULTS = {
  targetIdle: 1,
  scaleDownDelayMs: 60_000,
  scaleUpCooldownMs: 15_000,
} as const;

export interface GroupScaleInput {
  total: number;
  idle: number;
  pending: number;
  /** Replicas asked for but not yet applied on nodes: Σ max(0, spec.replicas − status.replicas). */
  unapplied: number;
  /** Sandboxes claimed since the previous run (0 on the first). */
  claimedSinceLast: number;
  minReplicas: number;
  /** Infinity when unbounded. */
  maxReplicas: number;
  targetIdle: number;
  /** Whether a scale-down is allowed now (no scale-up for the delay). */
  mayScaleDown: boolean;
  /**
   * Whether a raise for a shortfall alone is allowed now (no raise within the cooldown); new claims always may raise.
   */
  mayScaleUp: boolean;
}

/** The group's next total replicas. Pure. */
export function nextTotal(input: GroupScaleInput): number {
  const {
    total,
    idle,
    pending,
    unapplied,
    claimedSinceLast,
    minReplicas,
    maxReplicas,
    targetIdle,
    mayScaleDown,
    mayScaleUp,
  } = input;
  const clamp = (n: number): number => Math.max(minReplicas, Math.min(maxReplicas, n));
  if (total < minReplicas || total > maxReplicas) return clamp(total);
  const coming = idle + pending + unapplied;
  // The sandboxes claimed over the last interval are what the next one is likely to take too.
  const wanted = targetIdle + Math.max(0, claimedSinceLast);
  if (coming < wanted) return mayScaleUp || claimedSinceLast > 0 ? clamp(total + (wanted - coming)) : total;
  const band = Math.max(1, Math.ceil(targetIdle / 2));
  if (mayScaleDown && pending === 0 && unapplied === 0 && idle > targetIdle + band)
    return clamp(total - (idle - targetIdle));
  return total;
}

/**
 * Replicas per member after moving the total to `next`: up to the member with the fewest, down from the one with the
 * most.
 */
export function distribute(
  members: ReadonlyArray<{ pool: string; replicas: number }>,
  next: number,
): Map<string, number> {
  const out = new Map(members.map((m) => [m.pool, m.replicas]));
  let total = members.reduce((n, m) => n + m.replicas, 0);
  const pick = (most: boolean): string | undefined => {
    let chosen: string | undefined;
    for (const [pool, replicas] of out) {
      if (chosen === undefined) {
        chosen = pool;
        continue;
      }
      const held = out.get(chosen) ?? 0;
      if (most ? replicas > held : replicas < held) chosen = pool;
    }
    return chosen;
  };
  while (total !== next) {
    const up = next > total;
    const pool = pick(!up);
    if (pool === undefined) break;
    const replicas = out.get(pool) ?? 0;
    if (!up && replicas === 0) break;
    out.set(pool, replicas + (up ? 1 : -1));
    total += up ? 1 : -1;
  }
  return out;
}

export interface ScaleTarget {
  scale(namespace: string, pool: string, replicas: number, signal: AbortSignal): Promise<void>;
}

export interface EnvAutoscalerOptions {
  target: ScaleTarget;
  clock: Clock;
  scaleDownDelayMs?: number;
  scaleUpCooldownMs?: number;
  logger: Logger;
}

interface GroupMemory {
  running: number;
  lastScaleUpAt: number;
}

export class EnvAutoscaler {
  readonly #options: EnvAutoscalerOptions;
  readonly #memory = new Map<string, GroupMemory>();

  constructor(options: EnvAutoscalerOptions) {
    this.#options = options;
  }

  /** One pass over every Env (after a SandboxEnv run on the leader). */
  async run(
    envs: ReadonlyArray<{ env: SandboxEnv; capacity: EnvCapacity }>,
    counts: ReadonlyMap<string, PoolCounts>,
    pools: (namespace: string, name: string) => SandboxWarmPool | undefined,
    signal: AbortSignal,
  ): Promise<void> {
    const now = this.#options.clock.now();
    const seen = new Set<string>();
    const writes: Array<Promise<void>> = [];
    for (const { env, capacity } of envs) {
      for (const group of capacity.groups) {
        const autoscaling = group.name === '' ? undefined : autoscalingOf(env, group.name);
        if (autoscaling === undefined) continue;
        const scaled = { env, group, autoscaling, now };
        seen.add(groupKeyOf(scaled));
        const members = membersOf(scaled, counts, pools);
        if (members.length > 0) writes.push(...this.#scaleGroup(scaled, members, signal));
      }
    }
    for (const key of this.#memory.keys()) if (!seen.has(key)) this.#memory.delete(key);
    await Promise.all(writes);
  }

  /** The scale writes one group needs now (none when its total stays); remembers what the next run compares to. */
  #scaleGroup(scaled: ScaledGroup, members: readonly GroupMember[], signal: AbortSignal): Array<Promise<void>> {
    const { env, group, autoscaling, now } = scaled;
    const key = groupKeyOf(scaled);
    const memory = this.#memory.get(key) ?? { running: group.running, lastScaleUpAt: Number.NEGATIVE_INFINITY };
    const delay = this.#options.scaleDownDelayMs ?? AUTOSCALER_DEFAULTS.scaleDownDelayMs;
    const cooldown = this.#options.scaleUpCooldownMs ?? AUTOSCALER_DEFAULTS.scaleUpCooldownMs;
    const next = nextTotal({
      total: group.desired,
      idle: group.idle,
      pending: group.pending,
      unapplied: members.reduce((n, m) => n + m.unapplied, 0),
      claimedSinceLast: Math.max(0, group.running - memory.running),
      minReplicas: autoscaling.minReplicas ?? 0,
      maxReplicas: autoscaling.maxReplicas ?? Number.POSITIVE_INFINITY,
      targetIdle: autoscaling.targetIdle ?? AUTOSCALER_DEFAULTS.targetIdle,
      mayScaleDown: now - memory.lastScaleUpAt >= delay,
      mayScaleUp: now - memory.lastScaleUpAt >= cooldown,
    });
    this.#memory.set(key, { running: group.running, lastScaleUpAt: next > group.desired ? now : memory.lastScaleUpAt });
    if (next === group.desired) return [];
    const namespace = env.metadata?.namespace ?? '';
    this.#options.logger.info('scaling an Env group', {
      env: `${namespace}/${env.metadata?.name ?? ''}`,
      group: group.name,
      from: group.desired,
      to: next,
      idle: group.idle,
      pending: group.pending,
    });
    const writes: Array<Promise<void>> = [];
    for (const [pool, replicas] of distribute(members, next)) {
      if (replicas === members.find((m) => m.pool === pool)?.replicas) continue;
      writes.push(this.#scale(namespace, pool, replicas, signal));
    }
    return writes;
  }

  /** One member pool's scale write; a failure is logged (the next run tries again), never thrown. */
  async #scale(namespace: string, pool: string, replicas: number, signal: AbortSignal): Promise<void> {
    try {
      await this.#options.target.scale(namespace, pool, replicas, signal);
    } catch (err) {
      if (!signal.aborted)
        this.#options.logger.warn('could not scale a member pool', { pool: `${namespace}/${pool}`, replicas, err });
    }
  }
}

type EnvGroup = EnvCapacity['groups'][number];

/** One autoscaled group of an Env, in one run. */
interface ScaledGroup {
  env: SandboxEnv;
  group: EnvGroup;
  autoscaling: NonNullable<ReturnType<typeof autoscalingOf>>;
  now: number;
}

/** A member pool of a group: the replicas the nodes were asked for, and those not applied yet. */
interface GroupMember {
  pool: string;
  replicas: number;
  unapplied: number;
}

function groupKeyOf({ env, group }: ScaledGroup): string {
  return `${env.metadata?.namespace ?? ''}/${env.metadata?.name ?? ''}/${group.name}`;
}

/** The group's member pools that exist. `unapplied`: Σ max(0, spec.replicas − status.replicas). */
function membersOf(
  { env, group }: ScaledGroup,
  counts: ReadonlyMap<string, PoolCounts>,
  pools: (namespace: string, name: string) => SandboxWarmPool | undefined,
): GroupMember[] {
  const namespace = env.metadata?.namespace ?? '';
  return (env.spec?.members ?? [])
    .filter((m) => m.scalingGroup === group.name)
    .flatMap((m) => {
      const object = pools(namespace, m.pool);
      if (object === undefined) return [];
      return [
        {
          pool: m.pool,
          replicas: counts.get(refOf(namespace, m.pool))?.desired ?? 0,
          unapplied: Math.max(0, (object.spec?.replicas ?? 1) - (object.status?.replicas ?? 0)),
        },
      ];
    });
}

/** Scales a SandboxWarmPool through its scale subresource (what HPA and KEDA use too). */
export class KubeScaleTarget implements ScaleTarget {
  readonly #pools: ResourceClient<SandboxWarmPool>;

  constructor(kubeConfig: KubeConfig) {
    this.#pools = new ResourceClient<SandboxWarmPool>(kubeConfig, SandboxWarmPoolType);
  }

  async scale(namespace: string, pool: string, replicas: number, signal: AbortSignal): Promise<void> {
    await this.#pools.patchScale({ namespace, name: pool }, replicas, {
      signal: AbortSignal.any([signal, AbortSignal.timeout(10_000)]),
    });
  }
}
