// Publishes this cluster's capacity to the hub, every interval, as what changed
// since its last report: the changed records, the removed ones, and a hint on
// the channel so watchers read them at once. A report that changes nothing
// only renews the cluster's directory entry and TTLs (one script, no hint),
// so the hub's load follows change, not fleet size. The first report (and any
// report after the hub lost its keys or another writer took over) writes every
// record under a new epoch. A cluster that stops reporting (dead, paused,
// partitioned) disappears by itself when its TTLs run out.
import { randomBytes } from 'node:crypto';
import type { FederationHint, FederationRecord } from '@warmpool/api';
import { messageOf } from '@warmpool/runtime';
import type { Logger } from '@warmpool/runtime';
import type { Redis } from 'ioredis';
import { withHubScripts, type ScriptedHub } from './hub-scripts.js';
import { recordField, type FederationKeys } from './keys.js';
import type { FederationMetrics } from './metrics.js';
import { OnceLogger } from './redis.js';

export interface ReporterOptions {
  redis: Redis;
  keys: FederationKeys;
  clusterId: string;
  intervalMs: number;
  ttlMs: number;
  /** This cluster's records as of now (without the cluster id). */
  records: () => ReadonlyArray<Omit<FederationRecord, 'clusterId'>>;
  logger: Logger;
  metrics?: FederationMetrics;
}

interface WrittenState {
  epoch: string;
  version: number;
  /** Record field → JSON, as last confirmed written. */
  records: Map<string, string>;
}

export class FederationReporter {
  readonly #options: ReporterOptions;
  readonly #hub: ScriptedHub;
  readonly #health = new OnceLogger();
  /** What the hub holds as of this reporter's last confirmed report; undefined until the first. */
  #written: WrittenState | undefined;
  #timer: NodeJS.Timeout | undefined;
  #inFlight: Promise<void> | undefined;
  #reports = 0;

  constructor(options: ReporterOptions) {
    this.#options = options;
    this.#hub = withHubScripts(options.redis);
  }

  get running(): boolean {
    return this.#timer !== undefined;
  }

  /** Reports written so far. */
  get reports(): number {
    return this.#reports;
  }

  start(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => this.#tick(), this.#options.intervalMs);
    this.#timer.unref();
    this.#tick();
  }

  /** Stops reporting; what was written ages out after its TTL. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#inFlight;
  }

  /** Reports now (also what each tick does); rejects when the hub did not take it. */
  async report(): Promise<void> {
    const current = this.#serialize();
    const written = this.#written;
    const delta = written === undefined ? undefined : await this.#send('delta', written, current);
    if (delta !== undefined && written !== undefined) {
      this.#written = { epoch: written.epoch, version: delta, records: current };
    } else {
      const epoch = randomBytes(6).toString('hex');
      const version = await this.#send('full', { epoch, version: 0, records: new Map() }, current);
      if (version === undefined) throw new Error('the hub refused a full write');
      this.#written = { epoch, version, records: current };
    }
    this.#reports++;
  }

  /** This cluster's records as the hub holds them: record field → JSON. */
  #serialize(): Map<string, string> {
    const { clusterId } = this.#options;
    const out = new Map<string, string>();
    for (const local of this.#options.records()) {
      const record: FederationRecord = { clusterId, ...local };
      out.set(recordField(record), JSON.stringify(record));
    }
    return out;
  }

  /** Sends what changed from `base` to `current`; answers the new version, or undefined when the hub wants a full write. */
  async #send(mode: 'full' | 'delta', base: WrittenState, current: Map<string, string>): Promise<number | undefined> {
    const { keys, clusterId, ttlMs } = this.#options;
    const sets: string[] = [];
    for (const [field, json] of current) if (base.records.get(field) !== json) sets.push(field, json);
    const deletes = [...base.records.keys()].filter((field) => !current.has(field));
    const hint: FederationHint = { clusterId };
    const reply = await this.#hub.warmpoolHubReport(
      keys.directory,
      keys.records(clusterId),
      keys.changes(clusterId),
      clusterId,
      mode,
      base.epoch,
      base.version,
      Math.max(1, Math.round(ttlMs)),
      base.records.size,
      keys.hintChannel,
      JSON.stringify(hint),
      sets.length / 2,
      ...sets,
      ...deletes,
    );
    return reply[0] === 'ok' ? Number(reply[1]) : undefined;
  }

  #tick(): void {
    if (this.#inFlight !== undefined) return; // a slow hub: one report at a time
    const { logger, clusterId } = this.#options;
    this.#inFlight = this.report()
      .then(
        () => {
          this.#options.metrics?.report(true);
          this.#health.succeeded(() => logger.info('federation hub reachable again: reporting', { clusterId }));
        },
        (err: unknown) => {
          this.#options.metrics?.report(false);
          this.#health.failed(() =>
            logger.warn(
              'federation hub not reachable: not reporting (retrying every interval; local claims are unaffected)',
              { clusterId, err: messageOf(err) },
            ),
          );
        },
      )
      .finally(() => {
        this.#inFlight = undefined;
      });
  }
}
