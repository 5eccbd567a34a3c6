// The shared claim index in Redis: which node serves (namespace, claimRef),
// with the sandbox's id, token, deadline and owner address, so any replica can
// look a claim up, renew it or release it, and a claim asked for again while
// its sandbox lives gets the same sandbox.
//
// Keys (ref and id expire at the sandbox's deadline, so the index never outlives the
// sandbox it names):
//   <prefix>ref:<ns>/<claimRef> → the record (JSON), or a reservation while a
//                                 batch job serves it (the job id and the nodes
//                                 it asked, written before asking)
//   <prefix>id:<ns>/<id>        → <claimRef>
//   <prefix>events              → a stream of ClaimEvents (claimed, renewed,
//                                 released), trimmed to the last
//                                 `eventsWindowMs`: how every replica's
//                                 Sandbox view learns of a claim before its
//                                 node publishes it
import { claimRecordSchema, triedNodeSchema, type ClaimEvent, type ClaimRecord, type TriedNode } from '@warmpool/api';
import type { Redis } from 'ioredis';
import { z } from 'zod';

export const DEFAULT_INDEX_PREFIX = 'warmpool:claims:';
/** How long claim events stay in the stream: well above a node's publish interval (30 s by default). */
export const DEFAULT_EVENTS_WINDOW_MS = 10 * 60_000;

const reservationSchema = z.object({ job: z.string(), tried: z.array(triedNodeSchema) });
export type Reservation = z.output<typeof reservationSchema>;

/** What reserve() found for a claimRef. */
export type ReserveResult =
  | { state: 'new' }
  | { state: 'served'; record: ClaimRecord }
  /** Reserved by this job already (a retried or stalled job): `tried` may hold a served claim. */
  | { state: 'mine'; reservation: Reservation }
  /** Reserved by another job. */
  | { state: 'busy'; reservation: Reservation };

// KEYS: ref keys. ARGV[1]: job id, ARGV[2]: reservation TTL ms, ARGV[2 + i]: the JSON array of nodes key i is about to
// be sent to.
// Per key: '' when newly reserved (with those nodes), else the value found (left as it is).
const RESERVE = `
local out = {}
local job = cjson.encode(ARGV[1])
for i, key in ipairs(KEYS) do
  local found = redis.call('GET', key)
  if found then
    out[i] = found
  else
    redis.call('SET', key, '{"job":' .. job .. ',"tried":' .. ARGV[2 + i] .. '}', 'PX', ARGV[2])
    out[i] = ''
  end
end
return out`;

// KEYS[1]: ref key. ARGV[1]: expected job, ARGV[2]: new value, ARGV[3]: TTL ms. Writes only while the reservation is
// that job's.
const UPDATE_IF_RESERVED = `
local found = redis.call('GET', KEYS[1])
if not found then return 0 end
local ok, value = pcall(cjson.decode, found)
if not ok or value.job ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`;

// KEYS[1]: ref key. ARGV[1]: expected job. Drops the reservation only while it is that job's.
const DROP_IF_RESERVED = `
local found = redis.call('GET', KEYS[1])
if not found then return 0 end
local ok, value = pcall(cjson.decode, found)
if not ok or value.job ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1`;

// KEYS[1]: ref key, KEYS[2]: id key. ARGV[1]: expected id. Drops both only while the ref still names that sandbox.
const DROP_RECORD = `
local found = redis.call('GET', KEYS[1])
redis.call('DEL', KEYS[2])
if not found then return 0 end
local ok, value = pcall(cjson.decode, found)
if ok and value.id == ARGV[1] then redis.call('DEL', KEYS[1]) return 1 end
return 0`;

/** The scripts, sent once and then called by their SHA (EVALSHA); the first argument is the number of keys. */
interface Scripts {
  warmpoolClaimReserve(...args: Array<string | number>): Promise<string[]>;
  warmpoolClaimUpdateIfReserved(...args: Array<string | number>): Promise<number>;
  warmpoolClaimDropIfReserved(...args: Array<string | number>): Promise<number>;
  warmpoolClaimDropRecord(...args: Array<string | number>): Promise<number>;
}

function withScripts(redis: Redis): Redis & Scripts {
  const scripted = redis as Redis & Partial<Scripts>;
  if (scripted.warmpoolClaimReserve === undefined) {
    redis.defineCommand('warmpoolClaimReserve', { lua: RESERVE });
    redis.defineCommand('warmpoolClaimUpdateIfReserved', { lua: UPDATE_IF_RESERVED });
    redis.defineCommand('warmpoolClaimDropIfReserved', { lua: DROP_IF_RESERVED });
    redis.defineCommand('warmpoolClaimDropRecord', { lua: DROP_RECORD });
  }
  return redis as Redis & Scripts;
}

/**
 * Every call is one command or script per key (no MULTI, no pipeline
 * objects): on a connection with auto-pipelining, the commands a batch issues
 * in one tick travel in one write.
 */
export class ClaimIndex {
  readonly #redis: Redis & Scripts;
  readonly #prefix: string;
  readonly #now: () => number;
  readonly #eventsWindowMs: number;

  constructor(redis: Redis, options: { prefix?: string; now?: () => number; eventsWindowMs?: number } = {}) {
    this.#redis = withScripts(redis);
    this.#prefix = options.prefix ?? DEFAULT_INDEX_PREFIX;
    this.#now = options.now ?? Date.now;
    this.#eventsWindowMs = options.eventsWindowMs ?? DEFAULT_EVENTS_WINDOW_MS;
  }

  /** The stream of ClaimEvents (field `e`: the event's JSON). */
  get eventsKey(): string {
    return `${this.#prefix}events`;
  }

  refKey(namespace: string, claimRef: string): string {
    return `${this.#prefix}ref:${namespace}/${claimRef}`;
  }

  idKey(namespace: string, id: string): string {
    return `${this.#prefix}id:${namespace}/${id}`;
  }

  /**
   * Reserves every claimRef not yet known for `job`, recording the nodes it
   * is about to be sent to (`tried[i]`, written ahead), in one round trip;
   * answers what was there for the others, which stay as they were.
   */
  async reserve(
    namespace: string,
    claimRefs: readonly string[],
    job: string,
    ttlMs: number,
    tried: ReadonlyArray<readonly TriedNode[]> = [],
  ): Promise<ReserveResult[]> {
    const keys = claimRefs.map((ref) => this.refKey(namespace, ref));
    const nodes = claimRefs.map((_, i) => JSON.stringify(tried[i] ?? []));
    const found = await this.#redis.warmpoolClaimReserve(
      keys.length,
      ...keys,
      job,
      String(Math.max(1, Math.ceil(ttlMs))),
      ...nodes,
    );
    return found.map((value): ReserveResult => {
      if (value === '') return { state: 'new' };
      const parsed = parseValue(value);
      if (parsed === undefined) return { state: 'new' };
      if ('id' in parsed) return { state: 'served', record: parsed };
      return parsed.job === job ? { state: 'mine', reservation: parsed } : { state: 'busy', reservation: parsed };
    });
  }

  /** The value under a claimRef: a record, a reservation, or undefined. */
  async peek(namespace: string, claimRef: string): Promise<ClaimRecord | Reservation | undefined> {
    const value = await this.#redis.get(this.refKey(namespace, claimRef));
    return value === null ? undefined : parseValue(value);
  }

  /** Takes another job's reservation over (that job is gone), keeping the nodes it tried. */
  async takeOver(namespace: string, claimRef: string, from: Reservation, job: string, ttlMs: number): Promise<boolean> {
    const next: Reservation = { job, tried: from.tried };
    const done = await this.#redis.warmpoolClaimUpdateIfReserved(
      1,
      this.refKey(namespace, claimRef),
      from.job,
      JSON.stringify(next),
      String(Math.max(1, Math.ceil(ttlMs))),
    );
    return done === 1;
  }

  /** Records, before asking them, the nodes `job` asks. */
  async noteTried(
    namespace: string,
    entries: ReadonlyArray<{ claimRef: string; tried: readonly TriedNode[] }>,
    job: string,
    ttlMs: number,
  ): Promise<void> {
    const ttl = String(Math.max(1, Math.ceil(ttlMs)));
    await Promise.all(
      entries.map(({ claimRef, tried }) =>
        this.#redis.warmpoolClaimUpdateIfReserved(
          1,
          this.refKey(namespace, claimRef),
          job,
          JSON.stringify({ job, tried }),
          ttl,
        ),
      ),
    );
  }

  /** Records served claims (replacing their reservations); the keys expire at each sandbox's deadline. */
  async record(records: readonly ClaimRecord[]): Promise<void> {
    await Promise.all(
      records.flatMap((record) => {
        const expiresAt = this.#expiresAt(record.deadline);
        const { token: _token, ...shown } = record;
        return [
          this.#redis.set(this.refKey(record.namespace, record.claimRef), JSON.stringify(record), 'PXAT', expiresAt),
          this.#redis.set(this.idKey(record.namespace, record.id), record.claimRef, 'PXAT', expiresAt),
          // After the record on the same connection: whoever reads the event finds the record.
          this.#appendEvent({ op: 'claimed', record: shown }),
        ];
      }),
    );
  }

  #appendEvent(event: ClaimEvent): Promise<unknown> {
    return this.#redis.xadd(
      this.eventsKey,
      'MINID',
      '~',
      String(Math.max(0, this.#now() - this.#eventsWindowMs)),
      '*',
      'e',
      JSON.stringify(event),
    );
  }

  /** Drops reservations of `job` for claims that failed (nothing is claimed for them anywhere). */
  async dropReservations(namespace: string, claimRefs: readonly string[], job: string): Promise<void> {
    await Promise.all(
      claimRefs.map((ref) => this.#redis.warmpoolClaimDropIfReserved(1, this.refKey(namespace, ref), job)),
    );
  }

  /** The served claim by sandbox id or by claimRef. */
  async lookup(namespace: string, idOrClaimRef: string): Promise<ClaimRecord | undefined> {
    const [byRef, refOfId] = await this.#redis.mget(
      this.refKey(namespace, idOrClaimRef),
      this.idKey(namespace, idOrClaimRef),
    );
    const direct = byRef === null || byRef === undefined ? undefined : parseValue(byRef);
    if (direct !== undefined && 'id' in direct) return direct;
    if (refOfId === null || refOfId === undefined) return undefined;
    const value = await this.#redis.get(this.refKey(namespace, refOfId));
    const record = value === null ? undefined : parseValue(value);
    return record !== undefined && 'id' in record && record.id === idOrClaimRef ? record : undefined;
  }

  /** A renewed deadline: the record and both keys now expire then. */
  async renewed(record: ClaimRecord, deadline: string): Promise<void> {
    await this.record([{ ...record, deadline }]);
  }

  /** Forgets a released (or vanished) claim. */
  async drop(record: ClaimRecord): Promise<void> {
    await Promise.all([
      this.#redis.warmpoolClaimDropRecord(
        2,
        this.refKey(record.namespace, record.claimRef),
        this.idKey(record.namespace, record.id),
        record.id,
      ),
      this.#appendEvent({ op: 'released', namespace: record.namespace, claimRef: record.claimRef, id: record.id }),
    ]);
  }

  #expiresAt(deadline: string): number {
    const at = Date.parse(deadline);
    // A deadline already past (or unreadable) names a sandbox the node has reaped: keep it a moment only.
    return Number.isFinite(at) && at > this.#now() ? at : this.#now() + 1_000;
  }
}

function parseValue(value: string): ClaimRecord | Reservation | undefined {
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch {
    return undefined;
  }
  const record = claimRecordSchema.safeParse(json);
  if (record.success) return record.data;
  const reservation = reservationSchema.safeParse(json);
  return reservation.success ? reservation.data : undefined;
}
