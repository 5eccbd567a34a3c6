// The knobs of a fake node. The defaults are fast, not realistic (a cold boot of 150 ms against a real daemon's
// seconds), so tests stay quick; the README says which to set for realistic timing.
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
  /** Latency of a claim that must boot its sandbox cold (the real daemon waits up to 90 s for one). */
  coldBootMs?: number;
  /**
   * Latency of a warm miss on a key whose golden image is ready: a clone, not a cold boot (the real daemon waits up
   * to 15 s for its probe). Default: coldBootMs.
   */
  cloneMs?: number;
  /**
   * How long destroying one warm VM takes when `PUT /v1/pools` trims it; the answer waits for every trimmed VM, up
   * to refillConcurrency at once (the real daemon allows 120 s per VM). Default 0.
   */
  trimMsPerVm?: number;
  /** The node can attach egress-lane VMs (a bridge or network is configured); without it `net: egress` is a 409. */
  egressAttachment?: boolean;
  /**
   * Mesh mode: the peers a claim is redirected to (at most two are named) on a warm miss, at max_claims or while
   * draining, unless the claim says `no_redirect`. Empty: a node alone, which never redirects.
   */
  redirectPeers?: readonly string[];
  /** Rows carry no `claimed_at`, as for claims recorded before the field existed. */
  omitClaimedAt?: boolean;
  /** An older daemon: `GET /v1/sandboxes` ignores `?claim_ref=`, and there is no renew route. */
  olderDaemon?: boolean;
  /** How long one refill boot takes (default: coldBootMs). */
  bootMs?: number;
  /** Lease of a claim or renew that asks for 0 or nothing. */
  defaultTtlSeconds?: number;
  /** Probability that a boot fails (a refill boot is lost; a cold claim answers 500). */
  bootFailureRate?: number;
  /** Probability that a claim fails with 500 before anything is handed over. */
  claimFailureRate?: number;
  /** `owner_addr` in claim answers: where the sandbox is reached (host:port); false = no advertise address (none). */
  advertise?: string | false;
  /** A full http(s) origin that replaces `advertise` as `owner_addr` (the daemon's `client_advertise`). */
  clientAdvertise?: string;
  clock?: TimerClock;
  /** Uniform [0, 1) source for the failure rates. */
  random?: () => number;
}

export type ResolvedOptions = Required<Omit<FakeSandboxdOptions, 'clientAdvertise'>> &
  Pick<FakeSandboxdOptions, 'clientAdvertise'>;

export const DEFAULT_OPTIONS = {
  maxClaims: 1_000,
  room: 1_200,
  refillRate: 200,
  refillConcurrency: 32,
  warmClaimLatencyMs: 0,
  coldBootMs: 150,
  trimMsPerVm: 0,
  egressAttachment: false,
  redirectPeers: [] as readonly string[],
  omitClaimedAt: false,
  olderDaemon: false,
  defaultTtlSeconds: DEFAULT_TTL_SECONDS,
  bootFailureRate: 0,
  claimFailureRate: 0,
  advertise: '127.0.0.1:7777',
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
    cloneMs: merged.cloneMs ?? coldBootMs,
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
    'cloneMs',
    'trimMsPerVm',
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
  if (resolved.clientAdvertise !== undefined && !/^https?:\/\/[^/?#@]+$/.test(resolved.clientAdvertise))
    throw new RangeError(`clientAdvertise must be an http or https origin (got ${resolved.clientAdvertise})`);
  return resolved;
}

function withoutUndefined(options: FakeSandboxdOptions): FakeSandboxdOptions {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as FakeSandboxdOptions;
}
