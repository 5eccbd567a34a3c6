// The refill lead time: how long a claimed warm sandbox takes to be replaced.
// By Little's law, the mean time a refill is owed = the mean number owed
// (target − warm, summed over the nodes: booting plus waiting for a boot slot
// or a rate token) / the rate boots complete. Both are smoothed with the same
// exponential time constant, so the ratio follows the fleet's boot speed as it
// changes, including the queueing a burst adds. Until a boot has been seen, or
// while boots are too rare to measure, the last estimate (initially the
// configured one) stands.

export interface LeadTimeSettings {
  /** Used until boots have been observed. */
  initialSeconds: number;
  /** Never below this (e.g. the control loop's own reaction time). */
  minSeconds: number;
  /** Never above this: a stalled fleet must not ask for unbounded replicas. */
  maxSeconds: number;
  /** Smoothing time constant of both averages. */
  smoothingSeconds: number;
}

export const LEAD_TIME_DEFAULTS: LeadTimeSettings = {
  initialSeconds: 10,
  minSeconds: 0.5,
  maxSeconds: 300,
  smoothingSeconds: 60,
};

/** Below this many completed boots per second (smoothed) the ratio is noise. */
const MIN_BOOT_RATE = 1e-3;

export class LeadTimeEstimator {
  readonly #settings: LeadTimeSettings;
  #lastAt: number | undefined;
  #owed = 0;
  #bootRate = 0;
  #estimate: number;
  #observed = false;

  constructor(settings: Partial<LeadTimeSettings> = {}) {
    this.#settings = { ...LEAD_TIME_DEFAULTS, ...settings };
    this.#estimate = this.#clamp(this.#settings.initialSeconds);
  }

  /** Refills owed now, and boots completed since the previous observation. */
  observe(at: number, owed: number, booted: number): void {
    const last = this.#lastAt;
    this.#lastAt = at;
    if (last === undefined) {
      this.#owed = Math.max(0, owed);
      return;
    }
    const dt = at - last;
    if (!(dt > 0)) return;
    const alpha = 1 - Math.exp(-dt / this.#settings.smoothingSeconds);
    this.#owed += alpha * (Math.max(0, owed) - this.#owed);
    this.#bootRate += alpha * (Math.max(0, booted) / dt - this.#bootRate);
    if (booted > 0) this.#observed = true;
    if (this.#observed && this.#bootRate >= MIN_BOOT_RATE) this.#estimate = this.#clamp(this.#owed / this.#bootRate);
  }

  /** The current estimate, in seconds. */
  get seconds(): number {
    return this.#estimate;
  }

  /** Whether the estimate comes from observed boots (false: the configured initial value). */
  get observed(): boolean {
    return this.#observed;
  }

  #clamp(seconds: number): number {
    return Math.min(this.#settings.maxSeconds, Math.max(this.#settings.minSeconds, seconds));
  }
}
