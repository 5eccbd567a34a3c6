// The three sizing policies the demand-autoscaler benchmark compares on one
// trace: the autoscaler (libs/demand's DemandScaler, as the controller runs
// it), a static replicas count, and a reactive policy that keeps warm only
// what was claimed over the last claim window.
import { ClaimWindow, DemandScaler, type DemandSettings } from '@warmpool/demand';
import type { SizingPolicy, TickObservation } from './fleet-sim.ts';

export class DemandPolicy implements SizingPolicy {
  readonly name = 'autoscaler';
  readonly initialReplicas: number;
  readonly #scaler: DemandScaler;

  constructor(settings: DemandSettings) {
    this.#scaler = new DemandScaler(settings);
    this.initialReplicas = settings.minReplicas;
  }

  decide(observation: TickObservation): number {
    return this.#scaler.step(observation).replicas;
  }
}

export class StaticPolicy implements SizingPolicy {
  readonly name: string;
  readonly initialReplicas: number;

  constructor(replicas: number) {
    this.name = `static ${replicas}`;
    this.initialReplicas = replicas;
  }

  decide(): number {
    return this.initialReplicas;
  }
}

/** Refill what was claimed: replicas = the claims of the last window (every claim's replacement, nothing more). */
export class ReactivePolicy implements SizingPolicy {
  readonly name = 'reactive';
  readonly initialReplicas = 0;
  readonly #window: ClaimWindow;
  readonly #windowSeconds: number;
  #last: number | undefined;

  constructor(windowSeconds: number) {
    this.#windowSeconds = windowSeconds;
    this.#window = new ClaimWindow(windowSeconds);
  }

  decide(observation: TickObservation): number {
    this.#window.add(observation.at, observation.warmClaims, observation.coldClaims, this.#last ?? observation.at);
    this.#last = observation.at;
    const { warm, cold } = this.#window.counts(observation.at, this.#windowSeconds);
    return warm + cold;
  }
}

/**
 * The bound on a crowd's cold claims: the autoscaler until the first tick after
 * `onset` (trace seconds), then every replica the fleet may hold until the crowd
 * and one boot are over. Its cold claims in that crowd are what no policy that
 * learns of the crowd at its first tick can avoid, given the autoscaler's stock
 * at onset: the lead time (and the fleet's boot pace) alone make them.
 */
export class KnowsAtFirstTickPolicy implements SizingPolicy {
  readonly name = 'knows at first tick';
  readonly initialReplicas: number;
  readonly #inner: SizingPolicy;
  readonly #from: number;
  readonly #until: number;
  readonly #ceiling: number;

  constructor(inner: SizingPolicy, window: { from: number; until: number }, ceiling: number) {
    this.#inner = inner;
    this.initialReplicas = inner.initialReplicas;
    this.#from = window.from;
    this.#until = window.until;
    this.#ceiling = ceiling;
  }

  decide(observation: TickObservation): number {
    const replicas = this.#inner.decide(observation);
    return observation.at > this.#from && observation.at < this.#until ? this.#ceiling : replicas;
  }
}
