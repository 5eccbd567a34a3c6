// A run's time, phase by phase: for the reconcile's debug log.

/** Where a run's time went: each lap is the time since the previous one (or since it was made). */
export class Laps {
  #last = performance.now();
  readonly #laps: Record<string, number> = {};

  lap(phase: string): void {
    const now = performance.now();
    this.#laps[phase] = Math.round((now - this.#last) * 10) / 10;
    this.#last = now;
  }

  laps(): Readonly<Record<string, number>> {
    return this.#laps;
  }
}
