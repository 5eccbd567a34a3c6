// One pool's demand-driven sizing, step by step: each observation brings the
// claims served since the last one (warm and cold), the refills owed and the
// boots completed; the answer is the replicas to set and why. No clock, no
// I/O: the control plane's controller and the benchmark's simulation drive
// the same code.
//
// - Rate: claims per second over the last claim window (sliding). A burst
//   shows at the very next step: when the claims of the latest interval alone
//   are more than the window's rate makes plausible (beyond its Poisson
//   quantile at 1 − BURST_SIGNIFICANCE), that interval's own rate stands as a
//   floor for one claim window (by then the window holds the burst itself), so
//   a crowd is answered one interval after it starts rather than diluted over
//   the window; noise trips it about once in 1/BURST_SIGNIFICANCE intervals.
// - Lead time: Little's law over the refills owed (lead-time.ts).
// - Recommendation: the base stock for the hit-ratio target (recommend.ts),
//   clamped to [minReplicas, maxReplicas].
// - Hysteresis: raises at once, cuts only to the highest recommendation of
//   the stabilisation window (stabilizer.ts).
// - Incomplete counts (the shared claim counters were lost, e.g. Redis came
//   back empty): the rate may read low, so nothing is cut on it; the current
//   replicas stand in for the recommendation in the stabiliser's memory, so a
//   cut also waits out a full window after the counts are whole again.
import { ClaimWindow } from './claim-window.js';
import { LeadTimeEstimator, type LeadTimeSettings } from './lead-time.js';
import { poissonQuantile } from './poisson.js';
import { baseStock, clampReplicas, type Limit } from './recommend.js';
import { ScaleDownStabilizer } from './stabilizer.js';

/** How unlikely, under the window's rate, the latest interval's claims must be to count as a burst. */
export const BURST_SIGNIFICANCE = 1e-4;

export interface DemandSettings {
  minReplicas: number;
  maxReplicas: number;
  /** The share of claims to serve warm, in (0, 1). */
  targetHitRatio: number;
  /** The claim window: the rate is the claims of the last this-many seconds. */
  windowSeconds: number;
  /** A cut applies to the highest recommendation of this many seconds. */
  scaleDownStabilizationSeconds: number;
  /** Over how many seconds the observed hit ratio is reported (default: the stabilisation window, at least the claim window). */
  hitRatioSeconds?: number;
  leadTime?: Partial<LeadTimeSettings>;
}

export interface DemandObservation {
  /** Seconds, non-decreasing. */
  at: number;
  /** The replicas the pool asks for now. */
  current: number;
  /** Claims served warm / cold since the previous observation. */
  warmClaims: number;
  coldClaims: number;
  /**
   * Where those counts start: default the previous observation, or one claim
   * window before the first (a controller starting up reads a whole window).
   */
  since?: number;
  /** False when those counts may miss claims (lost shared counters). */
  countsComplete: boolean;
  /** Refills owed now, Σ max(0, target − warm) over the nodes; absent when unknown (no lead-time sample). */
  owed?: number;
  /** Boots completed since the previous observation; absent when unknown. */
  booted?: number;
}

export type DemandReason =
  | 'ScaledUp'
  | 'ScaledDown'
  | 'StabilizingScaleDown'
  | 'Steady'
  | 'IncompleteClaimCounts'
  | 'AtMinReplicas'
  | 'AtMaxReplicas';

export interface DemandDecision {
  replicas: number;
  /** The clamped recommendation before stabilisation. */
  recommended: number;
  /** Claims per second: over the claim window, or over the latest interval when it is a burst. */
  claimRate: number;
  /** True when the latest interval was a burst and set the rate. */
  burst: boolean;
  leadTimeSeconds: number;
  /** Whether the lead time was measured (false: still the configured initial value). */
  leadTimeObserved: boolean;
  /** Warm / all claims over the hit-ratio span; undefined without claims. */
  hitRatio: number | undefined;
  reason: DemandReason;
  message: string;
}

export function checkDemandSettings(settings: DemandSettings): void {
  const { minReplicas, maxReplicas, targetHitRatio, windowSeconds, scaleDownStabilizationSeconds } = settings;
  if (!(Number.isInteger(minReplicas) && minReplicas >= 0)) throw new RangeError('minReplicas must be an integer ≥ 0');
  if (!(Number.isInteger(maxReplicas) && maxReplicas >= minReplicas))
    throw new RangeError('maxReplicas must be an integer ≥ minReplicas');
  if (!(targetHitRatio > 0 && targetHitRatio < 1)) throw new RangeError('targetHitRatio must be in (0, 1)');
  if (!(windowSeconds > 0)) throw new RangeError('windowSeconds must be > 0');
  if (!(scaleDownStabilizationSeconds >= 0)) throw new RangeError('scaleDownStabilizationSeconds must be ≥ 0');
}

export class DemandScaler {
  readonly settings: DemandSettings;
  readonly #claims: ClaimWindow;
  readonly #leadTime: LeadTimeEstimator;
  readonly #stabilizer: ScaleDownStabilizer;
  readonly #hitRatioSeconds: number;
  #lastAt: number | undefined;
  /** The latest burst's rate, a floor of the rate until `until`. */
  #burst: { rate: number; until: number } | undefined;
  /** Counts are incomplete until this time (one claim window after the last incomplete observation). */
  #incompleteUntil = Number.NEGATIVE_INFINITY;

  constructor(settings: DemandSettings) {
    checkDemandSettings(settings);
    this.settings = settings;
    this.#hitRatioSeconds =
      settings.hitRatioSeconds ?? Math.max(settings.windowSeconds, settings.scaleDownStabilizationSeconds);
    this.#claims = new ClaimWindow(Math.max(settings.windowSeconds, this.#hitRatioSeconds));
    this.#leadTime = new LeadTimeEstimator(settings.leadTime);
    this.#stabilizer = new ScaleDownStabilizer(settings.scaleDownStabilizationSeconds);
  }

  step(observation: DemandObservation): DemandDecision {
    const { at, current } = observation;
    const since = observation.since ?? this.#lastAt ?? at - this.settings.windowSeconds;
    this.#lastAt = at;
    this.#claims.add(at, observation.warmClaims, observation.coldClaims, since);
    if (observation.owed !== undefined && observation.booted !== undefined)
      this.#leadTime.observe(at, observation.owed, observation.booted);
    if (!observation.countsComplete) this.#incompleteUntil = at + this.settings.windowSeconds;
    const incomplete = at < this.#incompleteUntil;

    const { rate: claimRate, burst } = this.#rate(at, since);
    const leadTimeSeconds = this.#leadTime.seconds;
    const stock = baseStock(claimRate, leadTimeSeconds, this.settings.targetHitRatio);
    const { replicas: recommended, limit } = clampReplicas(stock, this.settings);
    const replicas = incomplete
      ? Math.max(recommended, this.#stabilizer.next(at, Math.max(recommended, current), current))
      : this.#stabilizer.next(at, recommended, current);
    const { reason, message } = explain({
      replicas,
      recommended,
      current,
      limit,
      incomplete,
      claimRate,
      leadTimeSeconds,
    });
    return {
      replicas,
      recommended,
      claimRate,
      burst,
      leadTimeSeconds,
      leadTimeObserved: this.#leadTime.observed,
      hitRatio: this.#claims.hitRatio(at, this.#hitRatioSeconds),
      reason,
      message,
    };
  }

  #rate(at: number, since: number): { rate: number; burst: boolean } {
    const { windowSeconds } = this.settings;
    const windowRate = this.#claims.rate(at, windowSeconds);
    const interval = at - since;
    if (interval > 0 && interval < windowSeconds) {
      const { warm, cold } = this.#claims.counts(at, interval);
      const latest = warm + cold;
      if (latest > poissonQuantile(windowRate * interval, 1 - BURST_SIGNIFICANCE) && latest / interval > windowRate)
        this.#burst = { rate: latest / interval, until: at + windowSeconds };
    }
    if (this.#burst !== undefined && at >= this.#burst.until) this.#burst = undefined;
    if (this.#burst !== undefined && this.#burst.rate > windowRate) return { rate: this.#burst.rate, burst: true };
    return { rate: windowRate, burst: false };
  }
}

function explain(facts: {
  replicas: number;
  recommended: number;
  current: number;
  limit: Limit;
  incomplete: boolean;
  claimRate: number;
  leadTimeSeconds: number;
}): { reason: DemandReason; message: string } {
  const { replicas, recommended, current, limit, incomplete } = facts;
  const demand = `${facts.claimRate.toFixed(2)} claims/s over a ${facts.leadTimeSeconds.toFixed(1)} s lead time`;
  if (replicas > current) {
    if (limit === 'max') return { reason: 'AtMaxReplicas', message: `raised to maxReplicas ${replicas}: ${demand}` };
    return { reason: 'ScaledUp', message: `raised ${current} → ${replicas}: ${demand}` };
  }
  if (replicas < current) {
    if (limit === 'min') return { reason: 'AtMinReplicas', message: `cut to minReplicas ${replicas}: ${demand}` };
    return { reason: 'ScaledDown', message: `cut ${current} → ${replicas}: ${demand}` };
  }
  if (incomplete && recommended < current)
    return {
      reason: 'IncompleteClaimCounts',
      message: `holding ${current}: the shared claim counts were lost; no cut until a full window is counted again`,
    };
  if (recommended < current)
    return {
      reason: 'StabilizingScaleDown',
      message: `holding ${current} (${recommended} recommended): a cut waits out the stabilization window`,
    };
  if (limit === 'max') return { reason: 'AtMaxReplicas', message: `at maxReplicas ${replicas}: ${demand}` };
  if (limit === 'min') return { reason: 'AtMinReplicas', message: `at minReplicas ${replicas}: ${demand}` };
  return { reason: 'Steady', message: `${replicas} replicas for ${demand}` };
}
