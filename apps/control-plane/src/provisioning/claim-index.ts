// The claim index in Redis: an accelerator in front of the nodes, which are
// the source of truth for every claimed sandbox. It answers which node serves
// a claim (with the sandbox's id, token, deadline and owner address) without
// asking the nodes, and holds the reservations that make a batch job's claims
// exactly once. Any key may vanish at any moment: a missing record is rebuilt
// from the nodes (ClaimDirectory, IndexRepair), never read as "released".
//
// Keys (records expire a grace period after the sandbox's deadline):
//   <prefix>ref:<scope>/<claimRef>  the record (JSON), or a reservation while a batch job serves it (the job id and
//                                   the nodes it asked, written before asking). <scope>: crd/<ns>, http/<ns> or
//                                   fed/<peer>/<ns>: each front door is its own key space.
//   <prefix>id:<ns>/<id>            <scope>/<claimRef> of that sandbox
//   <prefix>events                  a stream of ClaimEvents (claimed, renewed, released) for the Sandbox view
//   <prefix>server                  the run_id of the Redis server the index was written on
//   <prefix>recovering              set (epoch ms) when that server changed: the index may have lost entries, so a
//                                   new reservation is not proof that no node holds the claim until IndexRepair has
//                                   swept every node again
import { randomUUID } from 'node:crypto';
import type { ClaimEvent, ClaimRecord } from '@warmpool/api';
import { SameTurn } from '@warmpool/batcher';
import { sleep } from '@warmpool/kube';
import type { Redis } from 'ioredis';
import type { ClaimScope } from './claim-service.js';
import { RECOVERY_TTL_MS, withScripts, type Scripts } from './claim-index-scripts.js';
import {
  parseValue,
  recordParts,
  scopeOf,
  scopePath,
  type JobProgress,
  type RecordResult,
  type Reservation,
  type Reserved,
  type ReserveEntry,
  type ReserveResult,
} from './claim-index-values.js';

export const DEFAULT_INDEX_PREFIX = 'warmpool:index:';
/** How long claim events stay in the stream: well above a node's publish interval (30 s by default). */
export const DEFAULT_EVENTS_WINDOW_MS = 10 * 60_000;
/** How long a record outlives its deadline (several janitor sweeps, which re-record what a node renewed). */
const RECORD_GRACE_MS = 5 * 60_000;
/** Records written by one script at most (a turn's records beyond go in more scripts): keeps each script short. */
const RECORDS_PER_SCRIPT = 64;
/** How long a reservation waits for the identity check of a connection being (re)made. */
const CHECK_WAIT_MS = 2_000;

/**
 * Every call is one command or script (no MULTI, no pipeline objects): on a
 * connection with auto-pipelining, the commands a batch issues in one tick
 * travel in one write; the records of one turn are one script.
 */
export class ClaimIndex {
  readonly #redis: Redis & Scripts;
  readonly #prefix: string;
  readonly #now: () => number;
  readonly #eventsWindowMs: number;
  /**
   * The check of the server's identity after the latest (re)connect: reservations wait for it, so none is made on a
   * new server before the index knows it may have lost entries. While disconnected it waits for the next connection,
   * at most CHECK_WAIT_MS (the command then fails as any command does while Redis is away).
   */
  #serverChecked: Promise<void> = Promise.resolve();
  readonly #unwatch: () => void;
  readonly #records = new SameTurn<{ record: ClaimRecord; job: string }, RecordResult>(
    (items) => this.#recordAll(items),
    {
      maxItems: RECORDS_PER_SCRIPT,
    },
  );

  constructor(redis: Redis, options: { prefix?: string; now?: () => number; eventsWindowMs?: number } = {}) {
    this.#redis = withScripts(redis);
    this.#prefix = options.prefix ?? DEFAULT_INDEX_PREFIX;
    this.#now = options.now ?? Date.now;
    this.#eventsWindowMs = options.eventsWindowMs ?? DEFAULT_EVENTS_WINDOW_MS;
    let connected: () => void = () => undefined;
    const awaitConnection = (): void => {
      const next = new Promise<void>((resolve) => (connected = resolve));
      this.#serverChecked = Promise.race([next, sleep(CHECK_WAIT_MS)]);
    };
    const onReady = (): void => {
      const checked = this.#checkServer();
      this.#serverChecked = checked;
      void checked.then(connected);
    };
    if (redis.status === 'ready') onReady();
    else awaitConnection();
    redis.on('ready', onReady);
    redis.on('close', awaitConnection);
    this.#unwatch = () => {
      redis.off('ready', onReady);
      redis.off('close', awaitConnection);
    };
  }

  /** Stops following the connection's reconnects (the connection itself is its owner's to close). */
  close(): void {
    this.#unwatch();
  }

  /** The stream of ClaimEvents (field `e`: the event's JSON). */
  get eventsKey(): string {
    return `${this.#prefix}events`;
  }

  /** The prefix every key of the index starts with. */
  get prefix(): string {
    return this.#prefix;
  }

  refKey(scope: ClaimScope, claimRef: string): string {
    return this.#refKeyAt(`${scopePath(scope)}/${claimRef}`);
  }

  /** The ref key of `<scope>/<claimRef>` (what an id key holds). */
  #refKeyAt(path: string): string {
    return `${this.#prefix}ref:${path}`;
  }

  idKey(namespace: string, id: string): string {
    return `${this.#prefix}id:${namespace}/${id}`;
  }

  get #recoveringKey(): string {
    return `${this.#prefix}recovering`;
  }

  /**
   * A Redis that restarted empty, or a replica promoted by Sentinel, has another
   * run_id than the one the index was written on: from then on the index may
   * lack reservations and records, until IndexRepair has swept the nodes.
   */
  async #checkServer(): Promise<void> {
    try {
      const info = await this.#redis.info('server');
      const runId = /run_id:(\w+)/.exec(info)?.[1] ?? '';
      const known = await this.#redis.get(this.#serverKey);
      if (known === runId) return;
      await this.#redis.set(this.#serverKey, runId);
      await this.#redis.set(this.#recoveringKey, this.#newMarker(), 'PX', RECOVERY_TTL_MS);
    } catch {
      // The connection dropped again: the next 'ready' checks again.
    }
  }

  /** The loss the index is recovering from (its marker and since when), or undefined. */
  async recovering(): Promise<{ marker: string; since: number } | undefined> {
    await this.#serverChecked;
    const value = await this.#redis.get(this.#recoveringKey);
    return value === null ? undefined : { marker: value, since: sinceOf(value) };
  }

  /** Ends a recovery after a complete repair sweep that started after it began (the caller's to ensure). */
  async endRecovery(marker: string): Promise<boolean> {
    const runId = /run_id:(\w+)/.exec(await this.#redis.info('server'))?.[1] ?? '';
    return (await this.#redis.warmpoolIndexEndRecovery(2, this.#recoveringKey, this.#serverKey, marker, runId)) === 1;
  }

  get #serverKey(): string {
    return `${this.#prefix}server`;
  }

  /** A recovery's marker: when the loss was seen, and a nonce so a later loss is told apart. */
  #newMarker(): string {
    return `${this.#now()}:${randomUUID()}`;
  }

  /**
   * Reserves every claimRef not yet known for `job`, recording the nodes it
   * is about to be sent to (written ahead), and the job's progress when
   * given, in one round trip; answers what was there for the others, which
   * stay as they were.
   */
  async reserve(
    entries: readonly ReserveEntry[],
    job: string,
    ttlMs: number,
    progress?: JobProgress,
  ): Promise<Reserved> {
    await this.#serverChecked;
    const keys = entries.map((e) => this.refKey(e.scope, e.claimRef));
    const nodes = entries.map((e) => JSON.stringify(e.tried ?? []));
    const [recovering = '', ...found] = await this.#redis.warmpoolIndexReserve(
      keys.length + 3,
      this.#recoveringKey,
      this.#serverKey,
      progress?.key ?? this.#recoveringKey,
      ...keys,
      job,
      ttlArg(ttlMs),
      this.#newMarker(),
      progress === undefined ? '' : JSON.stringify(progress.value),
      ...nodes,
    );
    const states = found.map((value): ReserveResult => {
      if (value === '') return { state: 'new' };
      const parsed = parseValue(value);
      if (parsed === undefined) return { state: 'new' };
      if ('id' in parsed) return { state: 'served', record: parsed };
      return parsed.job === job ? { state: 'mine', reservation: parsed } : { state: 'busy', reservation: parsed };
    });
    return { states, recoveringSince: recovering === '' ? undefined : sinceOf(recovering) };
  }

  /** The value under a claimRef: a record, a reservation, or undefined. */
  async peek(scope: ClaimScope, claimRef: string): Promise<ClaimRecord | Reservation | undefined> {
    const value = await this.#redis.get(this.refKey(scope, claimRef));
    return value === null ? undefined : parseValue(value);
  }

  /** Takes another job's reservation over (that job is gone), keeping the nodes it tried. */
  async takeOver(scope: ClaimScope, claimRef: string, from: Reservation, job: string, ttlMs: number): Promise<boolean> {
    const next: Reservation = { job, tried: from.tried };
    const done = await this.#redis.warmpoolIndexUpdateIfReserved(
      1,
      this.refKey(scope, claimRef),
      from.job,
      JSON.stringify(next),
      ttlArg(ttlMs),
    );
    return done === 1;
  }

  /**
   * Records, before asking them, the nodes `job` asks (and the job's progress
   * when given), in one round trip. Answers the ref keys of the claims whose
   * reservation is no longer the job's (lost with Redis's data, or taken
   * over): their nodes must not be asked.
   */
  async noteTried(
    entries: readonly ReserveEntry[],
    job: string,
    ttlMs: number,
    progress?: JobProgress,
  ): Promise<Set<string>> {
    const keys = entries.map((e) => this.refKey(e.scope, e.claimRef));
    const written = await this.#redis.warmpoolIndexNoteTried(
      keys.length + 1,
      progress?.key ?? this.#recoveringKey,
      ...keys,
      job,
      ttlArg(ttlMs),
      progress === undefined ? '' : JSON.stringify(progress.value),
      ...entries.map(({ tried }) => JSON.stringify({ job, tried: tried ?? [] })),
    );
    return new Set(keys.filter((_, i) => written[i] !== 1));
  }

  /**
   * Records a served claim in place of `job`'s reservation (job '' for a
   * claim rebuilt from a node). Refused, with what holds the claimRef, when
   * another job or another sandbox holds it: the caller's sandbox is then
   * the extra one. The records of one turn go in one script.
   */
  record(record: ClaimRecord, job: string): Promise<RecordResult> {
    return this.#records.add({ record, job });
  }

  async #recordAll(items: ReadonlyArray<{ record: ClaimRecord; job: string }>): Promise<RecordResult[]> {
    const keys: string[] = [this.eventsKey];
    const args: string[] = [this.#eventsMinId()];
    for (const { record, job } of items) {
      const path = `${scopePath(scopeOf(record))}/${record.claimRef}`;
      const { shownJson, tokenJson } = recordParts(record);
      keys.push(this.#refKeyAt(path), this.idKey(record.namespace, record.id));
      args.push(job, shownJson, String(this.#expiresAt(record.deadline)), path, record.id, tokenJson);
    }
    const found = await this.#redis.warmpoolIndexRecord(keys.length, ...keys, ...args);
    return found.map((value) => (value === '' ? { ok: true } : { ok: false, holder: parseValue(value) }));
  }

  #appendEvent(event: ClaimEvent): Promise<unknown> {
    return this.#redis.xadd(this.eventsKey, 'MINID', '~', this.#eventsMinId(), '*', 'e', JSON.stringify(event));
  }

  /** Stream entries older than the events window are trimmed as new ones come. */
  #eventsMinId(): string {
    return String(Math.max(0, this.#now() - this.#eventsWindowMs));
  }

  /** Drops reservations of `job` for claims that failed (nothing is claimed for them anywhere). */
  async dropReservations(entries: ReadonlyArray<Omit<ReserveEntry, 'tried'>>, job: string): Promise<void> {
    await Promise.all(
      entries.map((e) => this.#redis.warmpoolIndexDropIfReserved(1, this.refKey(e.scope, e.claimRef), job)),
    );
  }

  /** The served claim by sandbox id or by claimRef within a scope; undefined when the index does not know it. */
  async lookup(scope: ClaimScope, idOrClaimRef: string): Promise<ClaimRecord | undefined> {
    const [byRef, refOfId] = await this.#redis.mget(
      this.refKey(scope, idOrClaimRef),
      this.idKey(scope.namespace, idOrClaimRef),
    );
    const direct = byRef === null || byRef === undefined ? undefined : parseValue(byRef);
    if (direct !== undefined && 'id' in direct) return direct;
    const head = `${scopePath(scope)}/`;
    if (refOfId === null || refOfId === undefined || !refOfId.startsWith(head)) return undefined;
    const value = await this.#redis.get(this.#refKeyAt(refOfId));
    const record = value === null ? undefined : parseValue(value);
    return record !== undefined && 'id' in record && record.id === idOrClaimRef ? record : undefined;
  }

  /** A renewed deadline: the record and both keys now expire then. */
  async renewed(record: ClaimRecord, deadline: string): Promise<void> {
    await this.record({ ...record, deadline }, '');
  }

  /** Forgets a released (or vanished) claim. */
  async drop(record: ClaimRecord): Promise<void> {
    await Promise.all([
      this.#redis.warmpoolIndexDropRecord(
        2,
        this.refKey(scopeOf(record), record.claimRef),
        this.idKey(record.namespace, record.id),
        record.id,
      ),
      this.#appendEvent({ op: 'released', namespace: record.namespace, claimRef: record.claimRef, id: record.id }),
    ]);
  }

  /**
   * A record outlives its deadline by RECORD_GRACE_MS: the node may have
   * renewed the sandbox without the index (its own token renews it there), and
   * the janitor re-records it from the node well within that grace. A record
   * past its deadline is confirmed with its node before it is trusted.
   */
  #expiresAt(deadline: string): number {
    const at = Date.parse(deadline);
    return (Number.isFinite(at) ? Math.max(at, this.#now()) : this.#now()) + RECORD_GRACE_MS;
  }
}

function ttlArg(ttlMs: number): string {
  return String(Math.max(1, Math.ceil(ttlMs)));
}

function sinceOf(marker: string): number {
  const since = Number(marker.split(':')[0]);
  return Number.isFinite(since) ? since : 0;
}
