// The bare design's two index scripts (bench/lib/bare-claim-path.ts): the
// claim index's reserve and record reduced to their writes. Reserve: KEYS[1]
// the job's hash, KEYS[2..] ref keys; ARGV[1] the job id, ARGV[2] the TTL ms,
// ARGV[3] the job's progress. Record: KEYS[1] unused, KEYS[2..] ref keys;
// ARGV[1] the TTL ms, ARGV[i] the grant of KEYS[i].
export const BARE_RESERVE = `
local n = 0
for i = 2, #KEYS do
  if redis.call('SET', KEYS[i], ARGV[1], 'NX', 'PX', ARGV[2]) then n = n + 1 end
end
redis.call('HSET', KEYS[1], 'progress', ARGV[3])
return n`;

export const BARE_RECORD = `
for i = 2, #KEYS do
  redis.call('SET', KEYS[i], ARGV[i], 'PX', ARGV[1])
  redis.call('XADD', 'bare:events', 'MAXLEN', '~', 10000, '*', 'e', ARGV[i])
end
return #KEYS - 1`;
