// Whether, and for how many claims, a Provisioner's hold waits once the
// batches out are answered (provisioner.ts, "the batch out is answered").
//
// From the first answer until a hold ends with no batch out, it counts the
// claims answered and the claims added: callers answered early may be back
// before the last answer and are not awaited again; callers of every batch
// answered meanwhile are (two batches may be out at once, and a hold may end
// by its max duration while one is). It also learns whether callers ask
// again: a wait that ends with fewer than half of the awaited claims come, in
// proportion to the part of the gap it lasted (the max duration may cut it
// short), turns waiting off; then, after each answer, as many claims within a
// gap as a wait would have awaited turn it back on. A steady closed loop
// never turns it off; one-shot callers (SandboxClaims, bursts) stop costing
// their held claims the gap after one wait.

/** A wait under way: since when, for how many, and how many had come back before it. */
interface Wait {
  readonly since: number;
  readonly awaited: number;
  readonly backBefore: number;
}

/** While waiting is off: the claims come since the last answer, within a gap of it. */
interface Probe {
  readonly until: number;
  readonly awaited: number;
  came: number;
}

export class Rejoin {
  readonly #gapMs: number;
  readonly #now: () => number;
  /** From the first answer to the end of a hold with no batch out: claims answered, and claims added. */
  #counting = false;
  #answered = 0;
  #returned = 0;
  #callersRejoin = true;
  #wait: Wait | undefined;
  #probe: Probe | undefined;

  constructor(gapMs: number, now: () => number = () => performance.now()) {
    this.#gapMs = gapMs;
    this.#now = now;
  }

  /** False once a wait ended with too few callers back, until they come back within a gap of an answer. */
  get waiting(): boolean {
    return this.#callersRejoin;
  }

  /** A claim of a batch out was answered. */
  answered(): void {
    this.#counting = true;
    this.#answered++;
  }

  /** A claim was added. */
  added(): void {
    if (this.#counting) this.#returned++;
    const probe = this.#probe;
    if (probe === undefined) return;
    if (this.#now() > probe.until) this.#probe = undefined;
    else if (++probe.came >= probe.awaited) {
      this.#probe = undefined;
      this.#callersRejoin = true;
    }
  }

  /**
   * The last batch out is answered: how many more claims the hold waits for, at most `room` (0: none, it ends now);
   * undefined when waiting is off (it ends now, and the claims that come within the gap are counted).
   */
  begin(room = Number.POSITIVE_INFINITY): number | undefined {
    const due = Math.max(0, this.#answered - this.#returned);
    // Every caller answered is back already: nothing to wait for, and they do ask again.
    if (due === 0) {
      this.#callersRejoin = true;
      return 0;
    }
    const awaited = Math.min(due, room);
    // The held batch is full: it goes now, and says nothing about the callers.
    if (awaited <= 0) return 0;
    if (!this.#callersRejoin) {
      this.#probe = { until: this.#now() + this.#gapMs, awaited, came: 0 };
      return undefined;
    }
    this.#wait = { since: this.#now(), awaited, backBefore: this.#returned };
    return awaited;
  }

  /**
   * The hold ended, whatever ended it: a wait under way is judged; with no batch out, the counts start again at the
   * next answer.
   */
  end(nothingOut: boolean): void {
    const wait = this.#wait;
    if (wait !== undefined) {
      const part = Math.min(1, (this.#now() - wait.since) / this.#gapMs);
      this.#callersRejoin = 2 * (this.#returned - wait.backBefore) >= wait.awaited * part;
    }
    this.#wait = undefined;
    if (!nothingOut) return;
    this.#counting = false;
    this.#answered = 0;
    this.#returned = 0;
  }
}
