// The federation hub's Lua scripts. Each report and each read is one atomic
// script, so a reader never sees a cluster's directory entry and its records
// disagree.
//
// A cluster's directory entry is `<epoch>:<version>:<at>:<ttl>`: `at` is the
// hub's own time (Redis TIME, ms) of the cluster's last report, so a record's
// age is measured on one clock whatever the clusters' clocks say; the cluster
// is live while `now - at < ttl`. Its keys are kept for RETENTION × ttl, so a
// reporter that was late (a pause, a slow hub) goes on with a delta instead of
// making every reader read it whole again. `version` grows by one with every report that
// changes a record; `epoch` is chosen by the reporter at each full write, so a
// reader never applies a change log across a hub that lost its keys or a new
// leader's first report.
//
// The change log (a sorted set per cluster) scores each record field with the
// version that last changed it, and holds one member '' whose score is the
// log's floor: the log is complete for every version after the floor. A reader
// at version v of the same epoch reads only the fields scored above v, when
// v >= floor; otherwise it reads the whole records hash.
import type { Redis } from 'ioredis';

// Fields per HSET / HMGET / ZADD call: well below Lua's unpack limit.
const CHUNK = 1000;

/** How many TTLs a cluster's keys and directory entry outlive its last report. */
export const RETENTION = 10;

const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

const CHUNKED = `
local function chunked(cmd, key, list)
  for i = 1, #list, ${CHUNK} do redis.call(cmd, key, unpack(list, i, math.min(i + ${CHUNK} - 1, #list))) end
end`;

// KEYS: directory, records, changes. ARGV: cluster id, 'full' | 'delta', epoch, expected version, ttl ms, records the
// reporter believes stored, hint channel, hint message, n (fields set), then n field/value pairs, then the fields to
// delete. A delta whose expected entry or records are not there (lost keys, another writer) answers 'resync' and
// changes nothing; the reporter then sends a full write.
const REPORT = `${NOW}${CHUNKED}
local dir, recs, changes = KEYS[1], KEYS[2], KEYS[3]
local id, mode, epoch, ttl = ARGV[1], ARGV[2], ARGV[3], ARGV[5]
local keep = tonumber(ttl) * ${RETENTION}
local version
if mode == 'full' then
  redis.call('DEL', recs, changes)
  redis.call('ZADD', changes, 1, '')
  version = 1
else
  local entry = redis.call('HGET', dir, id)
  if not entry then return {'resync'} end
  local e, v = string.match(entry, '^([^:]+):(%d+):')
  if e ~= epoch or v ~= ARGV[4] then return {'resync'} end
  if redis.call('PEXPIRE', recs, keep) == 0 and tonumber(ARGV[6]) > 0 then return {'resync'} end
  version = tonumber(v)
end
local n = tonumber(ARGV[9])
local sets, fields = {}, {}
for i = 10, 9 + 2 * n, 2 do
  sets[#sets + 1] = ARGV[i]
  sets[#sets + 1] = ARGV[i + 1]
  fields[#fields + 1] = ARGV[i]
end
local dels = {}
for i = 10 + 2 * n, #ARGV do
  dels[#dels + 1] = ARGV[i]
  fields[#fields + 1] = ARGV[i]
end
if #fields > 0 then
  if mode ~= 'full' then
    -- A log grown far past the records (fields long deleted) starts again from here.
    if redis.call('ZCARD', changes) > 2 * redis.call('HLEN', recs) + 64 then redis.call('DEL', changes) end
    -- A log that is not there (lost, expired, just cut) is complete only from this version on.
    redis.call('ZADD', changes, 'NX', version, '')
    version = version + 1
    local scored = {}
    for _, field in ipairs(fields) do
      scored[#scored + 1] = version
      scored[#scored + 1] = field
    end
    chunked('ZADD', changes, scored)
  end
  chunked('HSET', recs, sets)
  chunked('HDEL', recs, dels)
  redis.call('PEXPIRE', recs, keep)
  redis.call('PUBLISH', ARGV[7], ARGV[8])
end
redis.call('PEXPIRE', changes, keep)
redis.call('HSET', dir, id, epoch .. ':' .. version .. ':' .. now .. ':' .. ttl)
return {'ok', version}`;

// KEYS: directory. Answers the hub's time, then the id and entry of every cluster still retained (live or not);
// drops the entries past retention and malformed ones.
const READ_DIRECTORY = `${NOW}
local all = redis.call('HGETALL', KEYS[1])
local out = {now}
for i = 1, #all, 2 do
  local at, ttl = string.match(all[i + 1], '^[^:]+:%d+:(%d+):(%d+)$')
  if at and now - tonumber(at) < tonumber(ttl) * ${RETENTION} then
    out[#out + 1] = all[i]
    out[#out + 1] = all[i + 1]
  else
    redis.call('HDEL', KEYS[1], all[i])
  end
end
return out`;

// KEYS: directory, records, changes. ARGV: cluster id, the reader's epoch and version. Answers the hub's time, then
// (when the cluster has an entry) its entry and 'dead' or 'same', or 'delta' / 'full' followed by field/value pairs;
// in a delta a deleted field's value is nil.
const READ_CLUSTER = `${NOW}
local entry = redis.call('HGET', KEYS[1], ARGV[1])
if not entry then return {now} end
local e, v, at, ttl = string.match(entry, '^([^:]+):(%d+):(%d+):(%d+)$')
if not e then return {now} end
if now - tonumber(at) >= tonumber(ttl) then return {now, entry, 'dead'} end
if e == ARGV[2] and v == ARGV[3] then return {now, entry, 'same'} end
if e == ARGV[2] then
  local floor = redis.call('ZSCORE', KEYS[3], '')
  if floor and tonumber(floor) <= tonumber(ARGV[3]) then
    local fields = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. ARGV[3], '+inf')
    local out = {now, entry, 'delta'}
    for i = 1, #fields, ${CHUNK} do
      local last = math.min(i + ${CHUNK} - 1, #fields)
      local values = redis.call('HMGET', KEYS[2], unpack(fields, i, last))
      for j = i, last do
        out[#out + 1] = fields[j]
        out[#out + 1] = values[j - i + 1] or false
      end
    end
    return out
  end
end
local out = {now, entry, 'full'}
for _, item in ipairs(redis.call('HGETALL', KEYS[2])) do out[#out + 1] = item end
return out`;

export type HubReply = Array<string | number | null>;

interface HubScripts {
  warmpoolHubReport(...args: Array<string | number>): Promise<HubReply>;
  warmpoolHubReadDirectory(...args: Array<string | number>): Promise<HubReply>;
  warmpoolHubReadCluster(...args: Array<string | number>): Promise<HubReply>;
}

export type ScriptedHub = Redis & HubScripts;

export function withHubScripts(redis: Redis): ScriptedHub {
  const scripted = redis as Redis & Partial<HubScripts>;
  if (scripted.warmpoolHubReport === undefined) {
    redis.defineCommand('warmpoolHubReport', { lua: REPORT, numberOfKeys: 3 });
    redis.defineCommand('warmpoolHubReadDirectory', { lua: READ_DIRECTORY, numberOfKeys: 1 });
    redis.defineCommand('warmpoolHubReadCluster', { lua: READ_CLUSTER, numberOfKeys: 3 });
  }
  return redis as ScriptedHub;
}

/** A directory entry as the scripts write it. */
export interface DirectoryEntry {
  epoch: string;
  version: number;
  /** Hub time (ms) of the cluster's last report. */
  at: number;
  ttlMs: number;
}

/** Whether the cluster's last report is younger than its TTL at hub time `now`. */
export function isLive(entry: DirectoryEntry, now: number): boolean {
  return now - entry.at < entry.ttlMs;
}

export function parseDirectoryEntry(value: unknown): DirectoryEntry | undefined {
  if (typeof value !== 'string') return undefined;
  const m = /^([^:]+):(\d+):(\d+):(\d+)$/.exec(value);
  if (m === null) return undefined;
  return { epoch: m[1] ?? '', version: Number(m[2]), at: Number(m[3]), ttlMs: Number(m[4]) };
}
