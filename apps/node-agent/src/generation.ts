// The SetPools generation guard. The control plane stamps every push with a
// generation that only grows; a push older than the last one applied is
// refused, so a reordered retry or a deposed leader cannot roll a node back.
// Pushes run one at a time, in arrival order, so two concurrent pushes cannot
// reach sandboxd out of order either.
//
// What the agent can bound by itself is the range (agentSetPoolsRequestSchema:
// at most MAX_GENERATION): it cannot know which generations a leader issued.
// The control plane can, and takes a node that reports more out of placement
// with an Event naming the recovery (the reset annotation, inventory/publisher.ts).
import { MAX_GENERATION } from '@warmpool/api';

export type GuardedOutcome<R> =
  | { outcome: 'applied'; result: R }
  /** sandboxd answered but did not accept the push: the applied generation stays. */
  | { outcome: 'rejected'; result: R }
  | { outcome: 'stale'; appliedGeneration: number }
  /** The last applied generation is not known yet (see recover()); nothing was sent. */
  | { outcome: 'not-recovered' };

export class GenerationGuard {
  #applied: number | undefined;
  #recovered: boolean;
  #tail: Promise<unknown> = Promise.resolve();
  readonly #listeners: Array<(generation: number) => void> = [];

  /**
   * `recovered: false` makes every push wait for recover(): after a restart the
   * last applied generation must be read back before anything can be judged stale.
   */
  constructor(options: { recovered: boolean; applied?: number }) {
    this.#recovered = options.recovered;
    this.#applied = options.applied;
  }

  /** The last generation applied, or undefined when none has been on this node. */
  get applied(): number | undefined {
    return this.#applied;
  }

  get recovered(): boolean {
    return this.#recovered;
  }

  /**
   * Sets the floor read back from the published inventory (undefined: this
   * node never had one). A number no control plane can issue (not an integer
   * in [0, MAX_GENERATION]) is not a floor; it is dropped.
   */
  recover(applied: number | undefined): void {
    if (applied !== undefined && Number.isSafeInteger(applied) && applied >= 0 && applied <= MAX_GENERATION)
      this.#raise(applied);
    this.#recovered = true;
  }

  onApplied(listener: (generation: number) => void): void {
    this.#listeners.push(listener);
  }

  /**
   * Runs `push` if `generation` is not older than the applied one, after every
   * push that arrived before it. `accepted` says whether sandboxd took it; only
   * then does the applied generation move. A throwing push moves nothing,
   * unless `mayHaveTakenEffect` says of its error that sandboxd may have taken
   * it (sent, no answer): then it counts as applied, since an older push let
   * through after it could roll sandboxd back. The sender's retry of the same
   * generation is still accepted.
   */
  apply<R>(
    generation: number,
    push: () => Promise<R>,
    accepted: (result: R) => boolean,
    mayHaveTakenEffect?: (err: unknown) => boolean,
  ): Promise<GuardedOutcome<R>> {
    const run = this.#tail.then(async (): Promise<GuardedOutcome<R>> => {
      if (!this.#recovered) return { outcome: 'not-recovered' };
      if (this.#applied !== undefined && generation < this.#applied)
        return { outcome: 'stale', appliedGeneration: this.#applied };
      let result: R;
      try {
        result = await push();
      } catch (err) {
        if (mayHaveTakenEffect?.(err) === true) this.#raise(generation);
        throw err;
      }
      if (!accepted(result)) return { outcome: 'rejected', result };
      this.#raise(generation);
      return { outcome: 'applied', result };
    });
    this.#tail = run.catch(() => undefined);
    return run;
  }

  #raise(generation: number): void {
    if (this.#applied !== undefined && generation <= this.#applied) return;
    this.#applied = generation;
    for (const listener of this.#listeners) listener(generation);
  }
}
