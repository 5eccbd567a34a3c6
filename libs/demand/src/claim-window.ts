// Claims counted in time buckets, kept for a bounded span: the claim arrival
// rate over the last window, and the observed hit ratio (warm / all) over a
// longer one. Times are seconds on the caller's clock; the caller passes them
// in, so the same code runs in a controller and in a simulation.

interface Bucket {
  /** The end of the interval this bucket counts (the observation's time). */
  at: number;
  warm: number;
  cold: number;
}

export class ClaimWindow {
  readonly #keepSeconds: number;
  #buckets: Bucket[] = [];
  /** Where the counts start: the beginning of the first interval added. */
  #coveredFrom: number | undefined;

  /** keepSeconds: the longest span any read asks for. */
  constructor(keepSeconds: number) {
    if (!(keepSeconds > 0)) throw new RangeError(`keepSeconds must be > 0 (got ${keepSeconds})`);
    this.#keepSeconds = keepSeconds;
  }

  /** Claims served in (since, at], counted at `at` (non-decreasing); `since` matters for the first add only. */
  add(at: number, warm: number, cold: number, since: number): void {
    this.#coveredFrom ??= Math.min(since, at);
    const last = this.#buckets.at(-1);
    if (last !== undefined && at < last.at) throw new RangeError(`time went backwards (${at} < ${last.at})`);
    this.#buckets.push({ at, warm: Math.max(0, warm), cold: Math.max(0, cold) });
    const horizon = at - this.#keepSeconds;
    let drop = 0;
    while (drop < this.#buckets.length - 1 && (this.#buckets[drop]?.at ?? at) <= horizon) drop++;
    if (drop > 0) this.#buckets = this.#buckets.slice(drop);
  }

  /** Warm and cold claims counted in (now − seconds, now]. */
  counts(now: number, seconds: number): { warm: number; cold: number } {
    let warm = 0;
    let cold = 0;
    for (const bucket of this.#buckets)
      if (bucket.at > now - seconds && bucket.at <= now) {
        warm += bucket.warm;
        cold += bucket.cold;
      }
    return { warm, cold };
  }

  /**
   * Claims per second over the last `seconds`; before that much history, over
   * the history there is.
   */
  rate(now: number, seconds: number): number {
    const { warm, cold } = this.counts(now, seconds);
    const span = this.#coveredFrom === undefined ? seconds : Math.min(seconds, now - this.#coveredFrom);
    return span > 0 ? (warm + cold) / span : 0;
  }

  /** Warm / all over the last `seconds`; undefined without claims. */
  hitRatio(now: number, seconds: number): number | undefined {
    const { warm, cold } = this.counts(now, seconds);
    return warm + cold === 0 ? undefined : warm / (warm + cold);
  }
}
