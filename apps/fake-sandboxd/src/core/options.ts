// The knobs of a fake node, with defaults close to a real sandboxd node.
import { DEFAULT_TTL_SECONDS, MAX_TTL_SECONDS } from '@warmpool/api';
import { systemClock, type TimerClock } from '@warmpool/runtime';

export interface FakeSandboxdOptions {
  /** Live claims the node accepts before answering 429. */
  maxClaims?: number;
  /** Sandboxes the node can hold at once: warm + claimed + booting. */
  room?: number;
  /** Refill boots started per second, node-wide (average; see refillBurst). */
  refillRate?: number;
  /** Refill boots that may start back to back before the rate applies (default: 1/10 s of refillRate). */
  refillBurst?: number;
  /** Refill boots in flight at once, node-wide. */
  refillConcurrency?: number;
  /** Extra latency of a warm claim's answer. */
  warmClaimLatencyMs?: number;
  /** Latency of a claim that must boot its sandbox cold. */
  coldBootMs?: number;
  /** How long one refill boot takes (default: coldBootMs). */
  bootMs?: number;
  /** Lease of a claim or renew that asks for 0 or nothing. */
  defaultTtlSeconds?: number;
  /** Probability that a boot fails (a refill boot is lost; a cold claim answers 500). */
  bootFailureRate?: number;
  /** Probability that a claim fails with 500 before anything is handed over. */
  claimFailureRate?: number;
  /** `owner_addr` in claim answers: where the sandbox is reached (host:port). */
  advertise?: string;
  clock?: TimerClock;
  /** Uniform [0, 1) source for the failure rates. */
  random?: () => number;
}

export type ResolvedOptions = Required<FakeSandboxdOptions>;

export const DEFAULT_OPTIONS = {
  maxClaims: 1_000,
  room: 1_200,
  refillRate: 200,
  refillConcurrency: 32,
  warmClaimLatencyMs: 0,
  coldBootMs: 150,
  defaultTtlSeconds: DEFAULT_TTL_SECONDS,
  bootFailureRate: 0,
  claimFailureRate: 0,
  advertise: '127.0.0.1:7070',
} as const;

function check(name: string, value: number, ok: boolean, want: string): void {
  if (!ok || Number.isNaN(value)) throw new RangeError(`${name} must be ${want} (got ${value})`);
}

export function resolveOptions(options: FakeSandboxdOptions): ResolvedOptions {
  const merged = { ...DEFAULT_OPTIONS, ...withoutUndefined(options) };
  const coldBootMs = merged.coldBootMs;
  const resolved: ResolvedOptions = {
    ...merged,
    bootMs: merged.bootMs ?? coldBootMs,
    refillBurst: merged.refillBurst ?? Math.max(1, Math.ceil(merged.refillRate / 10)),
    clock: merged.clock ?? systemClock,
    random: merged.random ?? Math.random,
  };
  const nonNegative: Array<keyof ResolvedOptions> = [
    'maxClaims',
    'room',
    'refillRate',
    'refillConcurrency',
    'warmClaimLatencyMs',
    'coldBootMs',
    'bootMs',
  ];
  for (const name of nonNegative) {
    const value = resolved[name] as number;
    check(name, value, value >= 0, 'a non-negative number');
  }
  check('refillBurst', resolved.refillBurst, resolved.refillBurst >= 1, 'at least 1');
  check(
    'defaultTtlSeconds',
    resolved.defaultTtlSeconds,
    resolved.defaultTtlSeconds > 0 && resolved.defaultTtlSeconds <= MAX_TTL_SECONDS,
    `in (0, ${MAX_TTL_SECONDS}]`,
  );
  for (const name of ['bootFailureRate', 'claimFailureRate'] as const) {
    check(name, resolved[name], resolved[name] >= 0 && resolved[name] <= 1, 'a probability in [0, 1]');
  }
  return resolved;
}

function withoutUndefined(options: FakeSandboxdOptions): FakeSandboxdOptions {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as FakeSandboxdOptions;
}
