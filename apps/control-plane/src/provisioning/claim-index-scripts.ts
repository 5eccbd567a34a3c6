// The claim index's Lua scripts: each check-and-write the index needs is one
// atomic script, sent once and then called by its SHA (EVALSHA).
import type { Redis } from 'ioredis';

/** The longest the index stays in recovery without a completed repair sweep. */
export const RECOVERY_TTL_MS = 10 * 60_000;

// A ref key's value as a table, or nil when it is not a JSON object (never written by the index): such a value is
// nobody's reservation nor record, and reading it must not fail the script, which carries other claims too.
const DECODE = `
local function decoded(found)
  local ok, value = pcall(cjson.decode, found)
  if ok and type(value) == 'table' then return value end
  return nil
end`;

// A batch job's progress (the nodes each claimRef was sent to) goes into BullMQ's hash of the job (field
// `progress`, as Job.updateProgress writes it, without its event) in the same script as the reservation, so a
// rerun of the job knows its nodes even after its reservations expired. Written only while the job's hash exists.
const WRITE_PROGRESS = `
local function writeProgress(key, progress)
  if progress ~= '' and redis.call('EXISTS', key) == 1 then redis.call('HSET', key, 'progress', progress) end
end`;

// KEYS[1]: the recovering key, KEYS[2]: the server key, KEYS[3]: the job's hash (see WRITE_PROGRESS), KEYS[4..]:
// ref keys. ARGV[1]: job id, ARGV[2]: reservation TTL ms, ARGV[3]: a recovery marker to start one with, ARGV[4]: the
// job's progress ('' to leave it), ARGV[1 + i]: the JSON array of nodes the ref key KEYS[i] is about to be sent to.
// A missing server key means the index lost its keys without a new server (FLUSHALL, eviction): a recovery starts.
// Answers the recovering value ('' when none), then per ref key '' when newly reserved, else the value found (left
// as it is).
const RESERVE = `${WRITE_PROGRESS}
if redis.call('EXISTS', KEYS[2]) == 0 then redis.call('SET', KEYS[1], ARGV[3], 'NX', 'PX', ${RECOVERY_TTL_MS}) end
local out = { redis.call('GET', KEYS[1]) or '' }
local job = cjson.encode(ARGV[1])
for i = 4, #KEYS do
  local found = redis.call('GET', KEYS[i])
  if found then
    out[i - 2] = found
  else
    redis.call('SET', KEYS[i], '{"job":' .. job .. ',"tried":' .. ARGV[i + 1] .. '}', 'PX', ARGV[2])
    out[i - 2] = ''
  end
end
writeProgress(KEYS[3], ARGV[4])
return out`;

// KEYS[1]: the job's hash (see WRITE_PROGRESS), KEYS[2..]: ref keys. ARGV[1]: the job id, ARGV[2]: TTL ms,
// ARGV[3]: the job's progress ('' to leave it), ARGV[2 + i]: the new reservation value of KEYS[i]. Writes each ref
// key only while its reservation is that job's; answers per ref key 1 when written, else 0.
const NOTE_TRIED = `${WRITE_PROGRESS}${DECODE}
local out = {}
for i = 2, #KEYS do
  out[i - 1] = 0
  local found = redis.call('GET', KEYS[i])
  if found then
    local value = decoded(found)
    if value and value.job == ARGV[1] then
      redis.call('SET', KEYS[i], ARGV[i + 2], 'PX', ARGV[2])
      out[i - 1] = 1
    end
  end
end
writeProgress(KEYS[1], ARGV[3])
return out`;

// KEYS[1]: ref key. ARGV[1]: expected job, ARGV[2]: new value, ARGV[3]: TTL ms. Writes only while the reservation is
// that job's.
const UPDATE_IF_RESERVED = `${DECODE}
local found = redis.call('GET', KEYS[1])
if not found then return 0 end
local value = decoded(found)
if not value or value.job ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`;

// KEYS[1]: ref key. ARGV[1]: expected job. Drops the reservation only while it is that job's.
const DROP_IF_RESERVED = `${DECODE}
local found = redis.call('GET', KEYS[1])
if not found then return 0 end
local value = decoded(found)
if not value or value.job ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1`;

// KEYS[1]: the event stream, then per record k (k = 1..n) KEYS[2k]: its ref key, KEYS[2k + 1]: its id key. ARGV[1]:
// the stream's MINID, then per record k, from ARGV[6k - 4]: the job that served it ('' for a rebuilt record), the
// record's JSON without its token (an object with at least one member), its expiry (epoch ms), the id key's value,
// the sandbox id, the token's JSON. Writes each record (the token put back before its closing brace) and appends its
// claimed event (the record without its token) when its ref is free, reserved by that job, or already names that
// sandbox; answers per record '' when written, else what holds its ref (left as it is). One script for every record
// of a turn.
const RECORD = `${DECODE}
local out = {}
for k = 1, (#KEYS - 1) / 2 do
  local ref, id, a = KEYS[2 * k], KEYS[2 * k + 1], 6 * k - 4
  local job, sandbox = ARGV[a], ARGV[a + 4]
  local found = redis.call('GET', ref)
  local mine = true
  if found then
    local value = decoded(found)
    mine = value ~= nil and ((value.job ~= nil and value.job == job) or (value.id ~= nil and value.id == sandbox))
  end
  if mine then
    local shown = ARGV[a + 1]
    redis.call('SET', ref, string.sub(shown, 1, -2) .. ',"token":' .. ARGV[a + 5] .. '}', 'PXAT', ARGV[a + 2])
    redis.call('SET', id, ARGV[a + 3], 'PXAT', ARGV[a + 2])
    redis.call('XADD', KEYS[1], 'MINID', '~', ARGV[1], '*', 'e', '{"op":"claimed","record":' .. shown .. '}')
    out[k] = ''
  else
    out[k] = found
  end
end
return out`;

// KEYS[1]: ref key, KEYS[2]: id key. ARGV[1]: expected id. Drops both only while the ref still names that sandbox.
const DROP_RECORD = `${DECODE}
local found = redis.call('GET', KEYS[1])
redis.call('DEL', KEYS[2])
if not found then return 0 end
local value = decoded(found)
if value and value.id == ARGV[1] then redis.call('DEL', KEYS[1]) return 1 end
return 0`;

// KEYS[1]: the recovering key, KEYS[2]: the server key. ARGV[1]: the value the recovering key must still hold,
// ARGV[2]: the server's run_id. Ends the recovery only if no later loss began one again, and notes the server the
// index is now whole on.
const END_RECOVERY = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
return redis.call('DEL', KEYS[1])`;

/** The scripts, sent once and then called by their SHA (EVALSHA); the first argument is the number of keys. */
export interface Scripts {
  warmpoolIndexReserve(...args: Array<string | number>): Promise<string[]>;
  warmpoolIndexNoteTried(...args: Array<string | number>): Promise<number[]>;
  warmpoolIndexUpdateIfReserved(...args: Array<string | number>): Promise<number>;
  warmpoolIndexDropIfReserved(...args: Array<string | number>): Promise<number>;
  warmpoolIndexRecord(...args: Array<string | number>): Promise<string[]>;
  warmpoolIndexDropRecord(...args: Array<string | number>): Promise<number>;
  warmpoolIndexEndRecovery(...args: Array<string | number>): Promise<number>;
}

export function withScripts(redis: Redis): Redis & Scripts {
  const scripted = redis as Redis & Partial<Scripts>;
  if (scripted.warmpoolIndexReserve === undefined) {
    redis.defineCommand('warmpoolIndexReserve', { lua: RESERVE });
    redis.defineCommand('warmpoolIndexNoteTried', { lua: NOTE_TRIED });
    redis.defineCommand('warmpoolIndexUpdateIfReserved', { lua: UPDATE_IF_RESERVED });
    redis.defineCommand('warmpoolIndexDropIfReserved', { lua: DROP_IF_RESERVED });
    redis.defineCommand('warmpoolIndexRecord', { lua: RECORD });
    redis.defineCommand('warmpoolIndexDropRecord', { lua: DROP_RECORD });
    redis.defineCommand('warmpoolIndexEndRecovery', { lua: END_RECOVERY });
  }
  return redis as Redis & Scripts;
}
