import type { FakeSandboxdOptions } from '@warmpool/fake-sandboxd';

/**
 * fake-sandboxd flags for measuring the claim path alone: room and refill so
 * large that every claim is a warm hit and nothing is ever released.
 */
export const UNBOUNDED_SANDBOXD_ARGS: readonly string[] = [
  '--max-claims',
  '10000000',
  '--room',
  '20000000',
  '--refill-rate',
  '100000000',
  '--refill-concurrency',
  '10000000',
  '--boot-ms',
  '0',
  '--warm-claim-ms',
  '0',
  '--default-ttl',
  '1h',
];

/** The same, as in-process fake-sandboxd options (the threaded fleets' sandboxds). */
export const UNBOUNDED_SANDBOXD_OPTIONS: Readonly<Omit<FakeSandboxdOptions, 'advertise'>> = {
  maxClaims: 10_000_000,
  room: 20_000_000,
  refillRate: 100_000_000,
  refillConcurrency: 10_000_000,
  bootMs: 0,
  coldBootMs: 0,
  warmClaimLatencyMs: 0,
  defaultTtlSeconds: 3_600,
};
