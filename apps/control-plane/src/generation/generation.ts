// The SetPools generation: a number that only grows, across pushes and across
// leaders, so an agent can refuse anything older than what it applied (a
// reordered retry, a deposed leader).
//
// generation = epoch · 2^21 + counter. The epoch is taken once per leadership
// term from a durable record with optimistic concurrency (one apiserver write
// per leader change, none per push); the counter counts push rounds within the
// term. A new leader's epoch is above every epoch any earlier leader took, so
// its generations are above all of theirs. Bounds: 2^21 (~2 million) rounds per
// epoch (then the source asks for a new epoch) and 2^32 epochs, so every
// generation is at most 2^53 − 1 = Number.MAX_SAFE_INTEGER.
//
// What is believed of a node (the bound): during a term with epoch E, every
// generation any leader has issued is either below generationOf(E, 0) (earlier
// leaders took their epochs, all below E, before pushing) or one this source
// handed out itself. A node reporting more (highestIssued) reports a number no
// leader issued: it was forged or corrupted, and it is believed of that node
// only (the node leaves placement); it never moves a recorded epoch. The bound holds
// across leader changes because the epoch record only grows and only the
// Lease holder writes it (lease-epoch-store.ts).
//
// A term may resume the epoch of this process's previous term instead of
// taking a new one, when that epoch is still the recorded one: then no other
// leader took an epoch in between (every term takes one before its first push,
// and only a holder writes the record), so every generation of that epoch came
// from this source, and its counter, kept in memory, continues above all of
// them. What that saves: a leader that steps down for a slow renewal and
// re-acquires its own Lease would otherwise push every node a new epoch's
// generation, which each agent publishes at once (the fence a restarted agent
// reads back): a write per node on the apiserver that was already too slow to
// renew. A new process has nothing to resume and always takes a new epoch.
// Whether it resumes or not, a term never starts an epoch this source handed
// out generations of over again from counter 0: where the record was lost and
// the nodes' floor lags (a majority had not published that epoch yet), the
// new epoch is still above this source's own last one.
import { epochOfGeneration, GENERATION_COUNTER_BITS } from '@warmpool/api';

/** The layout is the agents' contract too (they publish a new epoch's first generation at once): written in the api. */
export const COUNTER_BITS = GENERATION_COUNTER_BITS;
/** Generations per epoch. */
export const EPOCH_SPAN = 2 ** COUNTER_BITS;
export const MAX_EPOCH = 2 ** 32 - 1;

export function generationOf(epoch: number, counter: number): number {
  return epoch * EPOCH_SPAN + counter;
}

export const epochOf = epochOfGeneration;

/** The durable record of the last epoch taken. */
export interface EpochStore {
  /**
   * Atomically sets the stored epoch to max(stored + 1, minimum) and returns
   * it; throws GenerationExhaustedError, writing nothing, when that is above MAX_EPOCH.
   * `unrecordedFloor` counts only where no epoch is recorded (the record was
   * lost): where one is, it bounds every generation issued, and what nodes
   * report cannot move it. `resumable`: when the recorded epoch is exactly this
   * one, it is returned as it is and no new epoch is taken (GenerationSource
   * passes the epoch of its own previous term).
   */
  advance(minimum: number, signal?: AbortSignal, unrecordedFloor?: number, resumable?: number): Promise<number>;
}

export class GenerationExhaustedError extends Error {
  override name = 'GenerationExhaustedError';
}

export class GenerationSource {
  readonly #store: EpochStore;
  #epoch: number | undefined;
  #counter = 0;
  /** The least epoch to take should the record have been lost (from what a majority of nodes applied), this term. */
  #floor = 0;
  #last: number | undefined;
  #advancing: Promise<number> | undefined;
  /** Bumped by reset(): an epoch taken for an ended term must not be used by the next one. */
  #session = 0;
  /** The ended term's epoch and counter, which the next term continues if the record still holds that epoch. */
  #resumable: { epoch: number; counter: number; last: number | undefined } | undefined;
  #continued = false;
  /** The highest epoch any term of this source used (0: none): a later term's new epoch is above it. */
  #highestUsed = 0;

  constructor(store: EpochStore) {
    this.#store = store;
  }

  /** The epoch in use, or undefined before advance() (or after reset()). */
  get epoch(): number | undefined {
    return this.#epoch;
  }

  /** Whether the epoch in use is the previous term's, continued (no new epoch was taken for this term). */
  get continued(): boolean {
    return this.#continued;
  }

  /** The last generation handed out. */
  get last(): number | undefined {
    return this.#last;
  }

  /**
   * The highest generation any leader can have issued so far (see the bound
   * above); undefined before this term's epoch, when nothing can be judged.
   */
  get highestIssued(): number | undefined {
    if (this.#epoch === undefined) return undefined;
    return this.#last !== undefined && epochOf(this.#last) === this.#epoch
      ? this.#last
      : generationOf(this.#epoch, 0) - 1;
  }

  /** Whether next() can hand out a generation now; if not, advance() first. */
  get usable(): boolean {
    return this.#epoch !== undefined && this.#counter < EPOCH_SPAN;
  }

  /**
   * Takes a new epoch: above the stored one and, when no epoch is recorded
   * (the record was lost), above the epoch of `atLeastAbove` (what a majority
   * of nodes report having applied). Call on becoming leader and whenever
   * `usable` turns false. Concurrent calls share one write.
   */
  advance(atLeastAbove?: number, signal?: AbortSignal): Promise<number> {
    if (atLeastAbove !== undefined) this.#raiseFloor(atLeastAbove);
    if (this.#advancing === undefined) {
      const advancing: Promise<number> = this.#advance(signal).finally(() => {
        if (this.#advancing === advancing) this.#advancing = undefined;
      });
      this.#advancing = advancing;
    }
    return this.#advancing;
  }

  /** The next generation, or undefined when a new epoch is needed first. */
  next(): number | undefined {
    if (!this.usable) return undefined;
    const generation = generationOf(this.#epoch as number, this.#counter++);
    this.#last = generation;
    return generation;
  }

  /**
   * Leadership ended: nothing may be handed out until the next term's own
   * advance(), from that term's own floor (a forged one that left no epoch
   * must not outlive the nodes' recovery).
   */
  reset(): void {
    if (this.#epoch !== undefined && this.#counter < EPOCH_SPAN)
      this.#resumable = { epoch: this.#epoch, counter: this.#counter, last: this.#last };
    if (this.#epoch !== undefined) this.#highestUsed = Math.max(this.#highestUsed, this.#epoch);
    this.#floor = 0;
    this.#continued = false;
    this.#epoch = undefined;
    this.#last = undefined;
    this.#counter = 0;
    this.#session++;
    this.#advancing = undefined;
  }

  #raiseFloor(generation: number): void {
    if (!Number.isSafeInteger(generation) || generation < 0) return;
    this.#floor = Math.max(this.#floor, epochOf(generation) + 1);
  }

  async #advance(signal: AbortSignal | undefined): Promise<number> {
    // Above this term's own epoch, and an earlier term's of this source, too: a record lost (the Lease deleted,
    // then re-created without the annotation) must not hand out generations below those already issued.
    const minimum = Math.max(1, (this.#epoch ?? this.#highestUsed) + 1);
    // Only a new term resumes; within a term a new epoch is asked for because this one is used up or lost.
    const resumable = this.#epoch === undefined ? this.#resumable : undefined;
    if (minimum > MAX_EPOCH && resumable === undefined)
      throw new GenerationExhaustedError(`no epoch left above ${minimum - 1} (at most ${MAX_EPOCH})`);
    const session = this.#session;
    const epoch = await this.#store.advance(
      minimum,
      signal,
      this.#floor > 0 ? this.#floor : undefined,
      resumable?.epoch,
    );
    if (session !== this.#session) throw new Error('leadership ended while taking a generation epoch');
    if (epoch > MAX_EPOCH) throw new GenerationExhaustedError(`the stored epoch ${epoch} is above ${MAX_EPOCH}`);
    const continued = resumable?.epoch === epoch ? resumable : undefined;
    this.#resumable = undefined;
    this.#epoch = epoch;
    this.#continued = continued !== undefined;
    this.#counter = continued?.counter ?? 0;
    if (continued !== undefined) this.#last = continued.last;
    return epoch;
  }
}

/**
 * The highest generation a strict majority of the nodes report having applied
 * (undefined without such a majority): the floor of a new term's epoch, for
 * when the epoch record was lost. A majority, so that one node's number
 * (forged, corrupted) cannot move the fleet's epoch; and it counts only while
 * no epoch is recorded (EpochStore.advance), so not even a majority can move
 * a recorded one.
 */
export function majorityApplied(applied: ReadonlyArray<number | undefined>): number | undefined {
  const known = applied
    .filter((g): g is number => g !== undefined && Number.isSafeInteger(g) && g >= 0)
    .sort((a, b) => b - a);
  // With n nodes, the (⌊n/2⌋+1)-th highest is reached or passed by a strict majority of them.
  return known[Math.floor(applied.length / 2)];
}

/** An EpochStore in memory: for tests, and for runs without leader election. */
export class MemoryEpochStore implements EpochStore {
  epoch = 0;
  writes = 0;

  /** Epoch 0 is no record. */
  advance(minimum: number, _signal?: AbortSignal, unrecordedFloor?: number, resumable?: number): Promise<number> {
    if (resumable !== undefined && this.epoch !== 0 && this.epoch === resumable) return Promise.resolve(this.epoch);
    const epoch = Math.max(this.epoch + 1, minimum, this.epoch === 0 ? (unrecordedFloor ?? 0) : 0);
    if (epoch > MAX_EPOCH)
      return Promise.reject(new GenerationExhaustedError(`no epoch left above ${this.epoch} (at most ${MAX_EPOCH})`));
    this.epoch = epoch;
    this.writes++;
    return Promise.resolve(this.epoch);
  }
}
