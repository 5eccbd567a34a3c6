// Scale-down stabilisation, as the HPA does it: a raise applies at once; a
// cut applies only to the highest recommendation of the last window. So
// replicas never fall within `windowSeconds` of any moment whose
// recommendation was at least today's replicas (in particular of a raise):
// a pool cannot flap between two sizes faster than once per window, and a
// short lull inside a busy period never gives warm sandboxes away.

export class ScaleDownStabilizer {
  readonly #windowSeconds: number;
  #history: Array<{ at: number; replicas: number }> = [];

  constructor(windowSeconds: number) {
    if (!(windowSeconds >= 0)) throw new RangeError(`windowSeconds must be ≥ 0 (got ${windowSeconds})`);
    this.#windowSeconds = windowSeconds;
  }

  /** Records the recommendation at `at` and answers the replicas to apply given the current ones. */
  next(at: number, recommended: number, current: number): number {
    this.#history.push({ at, replicas: recommended });
    this.#history = this.#history.filter((entry) => entry.at > at - this.#windowSeconds || entry.at === at);
    if (recommended >= current) return recommended;
    const highest = Math.max(...this.#history.map((entry) => entry.replicas));
    return Math.min(current, highest);
  }
}
