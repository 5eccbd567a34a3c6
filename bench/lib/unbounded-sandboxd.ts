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
