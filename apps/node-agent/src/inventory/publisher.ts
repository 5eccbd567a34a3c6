// Keeps this node's NodeInventory current with few writes: one at start, one
// per publish interval (shortened by up to a tenth at random, so a fleet whose
// writes one event lined up, such as a new leader's push to every node, does
// not heartbeat in lockstep ever after), one soon after an urgent change (snapshot.ts), but
// never two closer than the minimum gap. What a push of the current leader
// term moved rides on the next write. A failed write (apiserver down) is retried with
// backoff; the API keeps serving claims meanwhile, since nothing on the claim
// path waits for this.
//
// Every status write answers with the object's spec; a spec someone else
// changed is put back at once (the write of the spec is otherwise made only
// when the object is new or its owner appears).
//
// Its first job after a (re)start is to read back the generation the node
// last applied (status.appliedGeneration), so a stale SetPools cannot slip in
// while the agent's memory is empty; SetPools is refused until that is done.
// The one exception is the recovery of a forged or corrupted number (the
// control-plane README): when the annotation RESET_APPLIED_GENERATION names
// exactly the number read back, the agent starts from 0 instead. Only that
// exact number: once a push moved it, the annotation is inert. 0 rather than
// none, so that the published value changes and replaces the forged one even
// where another field manager (a `kubectl patch`) co-owns it. The same read
// gives back the owner address last published: every write is a server-side
// apply of the whole status, so a restarted agent that has not yet learned the
// address (sandboxd's info may not name it) would otherwise erase it.
import type { NodeInfo, OwnerReference, TolerantSandboxRow } from '@warmpool/api';
import { Backoff } from '@warmpool/kube';
import { messageOf } from '@warmpool/runtime';
import type { Logger } from '@warmpool/runtime';
import type { GenerationGuard } from '../generation.js';
import type { AgentMetrics } from '../metrics.js';
import type { OwnerAddress } from '../owner-address.js';
import { claimedByKeyOf, entriesOf, type PublishedEntries } from './entries.js';
import { snapshotOf, statusOf, urgentChange, type InventorySnapshot } from './snapshot.js';
import type { InventoryReadBack, InventoryWriter } from './writer.js';

/** On a NodeInventory: the appliedGeneration its agent drops when it next starts (see above). */
export const RESET_APPLIED_GENERATION = 'warmpool.dev/reset-applied-generation';

/** The heartbeat comes after publishIntervalMs × (1 − HEARTBEAT_JITTER × random): never later than the interval. */
export const HEARTBEAT_JITTER = 0.1;

export interface InventoryPublisherOptions {
  writer: InventoryWriter;
  nodeName: string;
  /** The agent's advertise address (spec.address). */
  address: string;
  /** status.capacity when known. */
  capacity?: number;
  generations: GenerationGuard;
  /** The latest view of sandboxd; undefined until it first answered. */
  currentInfo: () => NodeInfo | undefined;
  /** status.ownerAddr: what the agent learned, seeded from the inventory read back at start. */
  ownerAddress: OwnerAddress;
  /**
   * The node's claims (GET /v1/sandboxes), read once per write, never per
   * claim: they give the per-pool claimed counts and status.entries[]. A
   * failure leaves both out of that write.
   */
  readClaims?: () => Promise<readonly TolerantSandboxRow[]>;
  publishIntervalMs: number;
  minPublishGapMs: number;
  /** Retry delays after a failed write (default 500 ms doubling to 30 s). */
  retryInitialMs?: number;
  retryMaxMs?: number;
  /** A number in [0, 1): the heartbeat's jitter (default Math.random). */
  random?: () => number;
  logger: Logger;
  metrics: AgentMetrics;
}

export class InventoryPublisher {
  readonly #options: InventoryPublisherOptions;
  readonly #backoff: Backoff;
  #published: InventorySnapshot | undefined;
  #lastAttemptAt = Number.NEGATIVE_INFINITY;
  #failures = 0;
  #lastError: string | undefined;
  #timer: NodeJS.Timeout | undefined;
  #dueAt = Number.POSITIVE_INFINITY;
  #inFlight: Promise<void> | undefined;
  #closed = false;
  /** Aborts the apiserver call in flight at close: a stopped apiserver must not hold the agent's shutdown. */
  readonly #closing = new AbortController();
  #owner: OwnerReference | undefined;
  #objectApplied = false;
  #started = false;
  /** Whether the inventory as it was before this agent started has been read (before any write). */
  #readBack = false;

  constructor(options: InventoryPublisherOptions) {
    this.#options = options;
    this.#backoff = new Backoff({ initialMs: options.retryInitialMs ?? 500, maxMs: options.retryMaxMs ?? 30_000 });
  }

  /** Whether the inventory has been written at least once by this agent. */
  get publishedOnce(): boolean {
    return this.#published !== undefined;
  }

  /** The last write's error while writes are failing. */
  get lastError(): string | undefined {
    return this.#lastError;
  }

  /** Reads back the applied generation and publishes as soon as sandboxd has answered. */
  start(): void {
    if (this.#started || this.#closed) return;
    this.#started = true;
    this.#schedule(0, true);
  }

  /** The node's state may have changed: publish soon if the change is urgent. */
  changed(): void {
    // While writes fail, the backoff decides when to try again; a change does not hurry it.
    if (!this.#started || this.#closed || this.#failures > 0) return;
    const info = this.#options.currentInfo();
    if (info === undefined) return;
    const reason = urgentChange(
      this.#published,
      snapshotOf(info, this.#options.generations.applied, undefined, this.#options.ownerAddress.value),
    );
    if (reason === undefined) return;
    this.#options.logger.debug('urgent change', { reason });
    // The first publish is what readiness waits for: no gap before it.
    const gapLeft =
      this.#published === undefined ? 0 : this.#lastAttemptAt + this.#options.minPublishGapMs - performance.now();
    this.#schedule(Math.max(0, gapLeft), false);
  }

  /** Stops publishing; a write in flight is abandoned (the next agent's first write puts the status right). */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#closing.abort(new Error('the node agent is closing'));
    await this.#inFlight;
  }

  /** Sets the next attempt `delayMs` from now; unless `replace`, an earlier one already set stands. */
  #schedule(delayMs: number, replace: boolean): void {
    if (this.#closed) return;
    const dueAt = performance.now() + delayMs;
    if (!replace && this.#timer !== undefined && this.#dueAt <= dueAt) return;
    clearTimeout(this.#timer);
    this.#dueAt = dueAt;
    this.#timer = setTimeout(() => this.#fire(), delayMs);
    this.#timer.unref();
  }

  #fire(): void {
    this.#timer = undefined;
    this.#dueAt = Number.POSITIVE_INFINITY;
    if (this.#closed) return;
    if (this.#inFlight !== undefined) {
      // One write at a time; the change is looked at again when it is done.
      return;
    }
    this.#inFlight = this.#attempt().finally(() => {
      this.#inFlight = undefined;
    });
  }

  async #attempt(): Promise<void> {
    const { writer, nodeName, generations, ownerAddress } = this.#options;
    this.#lastAttemptAt = performance.now();
    const started = this.#lastAttemptAt;
    try {
      if (!this.#readBack) {
        const previous = await writer.readStatus(nodeName, this.#closing.signal);
        ownerAddress.recover(previous?.status.ownerAddr);
        this.#readBack = true;
        if (!generations.recovered) this.#recoverGeneration(previous);
      }
      const known = this.#options.currentInfo();
      if (known === undefined) {
        // Nothing to say about the node yet; the first answer from sandboxd calls changed().
        this.#succeeded(undefined, started);
        return;
      }
      const claims = await this.#claims();
      // The info and the generation are read together, after the claims: a push applied meanwhile moves both (its
      // answer's info is observed in the same turn as its generation), never the generation alone.
      const info = this.#options.currentInfo() ?? known;
      const snapshot = snapshotOf(info, generations.applied, claims && claimedByKeyOf(claims), ownerAddress.value);
      await this.#write(snapshot, claims && entriesOf(claims));
      this.#succeeded(snapshot, started);
    } catch (err) {
      this.#failed(err);
    }
  }

  #recoverGeneration(previous: InventoryReadBack | undefined): void {
    const { generations, logger } = this.#options;
    const applied = previous?.status.appliedGeneration;
    if (applied !== undefined && previous?.annotations[RESET_APPLIED_GENERATION] === String(applied)) {
      logger.warn('applied generation reset to 0 as the NodeInventory annotation asks', {
        droppedGeneration: applied,
        annotation: RESET_APPLIED_GENERATION,
      });
      generations.recover(0);
    } else {
      generations.recover(applied);
    }
    logger.info('applied generation recovered from NodeInventory', {
      appliedGeneration: generations.applied ?? null,
      inventoryExisted: previous !== undefined,
    });
  }

  async #claims(): Promise<readonly TolerantSandboxRow[] | undefined> {
    try {
      return await this.#options.readClaims?.();
    } catch (err) {
      this.#options.logger.warn(
        "cannot read the node's claims; this write leaves out the per-pool claimed counts and the entries",
        { err },
      );
      return undefined;
    }
  }

  async #write(snapshot: InventorySnapshot, entries: PublishedEntries | undefined): Promise<void> {
    const { writer, nodeName } = this.#options;
    if (this.#owner === undefined) {
      const owner = await writer.nodeOwner(nodeName, this.#closing.signal);
      if (owner !== undefined) {
        this.#owner = owner;
        this.#objectApplied = false;
      }
    }
    if (!this.#objectApplied) await this.#applyObject();
    const status = statusOf(snapshot, new Date(), this.#options.capacity, entries);
    const signal = this.#closing.signal;
    let written = await writer.applyStatus(nodeName, status, signal);
    if (written === 'missing') {
      // Deleted behind our back (kubectl delete, or its Node went): create it again.
      await this.#applyObject();
      written = await writer.applyStatus(nodeName, status, signal);
      if (written === 'missing') throw new Error(`NodeInventory ${nodeName} vanished while being written`);
    }
    // The spec is re-asserted on every publish: anyone who re-pointed spec.address (say, with a
    // stolen token) is undone within one publish interval, not at the agent's next restart.
    const expected = this.#spec();
    if (written.spec?.nodeName !== expected.nodeName || written.spec.address !== expected.address) {
      this.#options.logger.warn('NodeInventory spec was changed by someone else: restoring it', {
        node: nodeName,
        found: written.spec ?? null,
        restored: expected,
      });
      this.#options.metrics.inventorySpecRestored();
      await this.#applyObject();
    }
  }

  #spec(): { nodeName: string; address: string } {
    return { nodeName: this.#options.nodeName, address: this.#options.address };
  }

  async #applyObject(): Promise<void> {
    const { writer, nodeName } = this.#options;
    await writer.applyObject(
      { name: nodeName, spec: this.#spec(), ...(this.#owner ? { owner: this.#owner } : {}) },
      this.#closing.signal,
    );
    this.#objectApplied = true;
  }

  #succeeded(snapshot: InventorySnapshot | undefined, started: number): void {
    const { logger, metrics, publishIntervalMs } = this.#options;
    if (snapshot !== undefined) {
      metrics.publishSucceeded((performance.now() - started) / 1000);
      if (this.#published === undefined) logger.info('NodeInventory published', { node: this.#options.nodeName });
      this.#published = snapshot;
    }
    if (this.#failures > 0) logger.info('NodeInventory writes recovered', { afterFailures: this.#failures });
    this.#failures = 0;
    this.#lastError = undefined;
    this.#backoff.reset();
    const random = this.#options.random ?? Math.random;
    this.#schedule(publishIntervalMs * (1 - HEARTBEAT_JITTER * random()), true);
    // Whatever changed while the write was in flight is judged against what was just written.
    this.changed();
  }

  #failed(err: unknown): void {
    const { logger, metrics } = this.#options;
    if (this.#closed) {
      logger.debug('NodeInventory write abandoned at close', { err: messageOf(err) });
      return;
    }
    metrics.publishFailed();
    this.#failures += 1;
    this.#lastError = messageOf(err);
    const retryInMs = Math.round(this.#backoff.next());
    logger.warn('publishing NodeInventory failed; retrying', { err, failures: this.#failures, retryInMs });
    this.#schedule(retryInMs, true);
  }
}
