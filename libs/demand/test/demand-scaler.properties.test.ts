import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BURST_SIGNIFICANCE, baseStock, DemandScaler, poissonQuantile, type DemandSettings } from '../src/index.js';

const RUNS = { numRuns: 200 };

/** A scenario: the scaler's settings, a fixed lead time (fed as owed/booted of a steady refill pipeline), a step. */
interface Scenario {
  settings: DemandSettings;
  /** Seconds between observations; the claim window is a whole number of them. */
  tick: number;
  leadTime: number;
}

const scenarioArb = fc
  .record({
    tick: fc.constantFrom(0.5, 1, 2),
    windowTicks: fc.integer({ min: 1, max: 10 }),
    stabilizationTicks: fc.integer({ min: 0, max: 60 }),
    leadTime: fc.constantFrom(0.5, 1, 2, 4, 8),
    target: fc.constantFrom(0.9, 0.95, 0.99, 0.999),
    minReplicas: fc.integer({ min: 0, max: 3 }),
  })
  .map(({ tick, windowTicks, stabilizationTicks, leadTime, target, minReplicas }): Scenario => ({
    tick,
    leadTime,
    settings: {
      minReplicas,
      maxReplicas: 100_000,
      targetHitRatio: target,
      windowSeconds: windowTicks * tick,
      scaleDownStabilizationSeconds: stabilizationTicks * tick,
      // Lead time known from the start: the properties are about the rate and the hysteresis.
      leadTime: { initialSeconds: leadTime, smoothingSeconds: 1e9 },
    },
  }));

/** Claims per tick: a whole number so the window reads the rate exactly. */
const perTickArb = fc.integer({ min: 0, max: 200 });

class Run {
  readonly scaler: DemandScaler;
  replicas: number;
  at = 0;
  readonly history: Array<{ at: number; replicas: number }> = [];

  readonly scenario: Scenario;

  constructor(scenario: Scenario) {
    this.scenario = scenario;
    this.scaler = new DemandScaler(scenario.settings);
    this.replicas = scenario.settings.minReplicas;
  }

  /** One observation `tick` after the last, with `claims` served warm since. */
  step(claims: number): number {
    const since = this.at;
    this.at += this.scenario.tick;
    const decision = this.scaler.step({
      at: this.at,
      since,
      current: this.replicas,
      warmClaims: claims,
      coldClaims: 0,
      countsComplete: true,
    });
    this.replicas = decision.replicas;
    this.history.push({ at: this.at, replicas: this.replicas });
    return this.replicas;
  }

  steps(count: number, claims: number): void {
    for (let i = 0; i < count; i++) this.step(claims);
  }

  /** What the model asks for at this per-tick claim count (clamped). */
  model(claims: number): number {
    const { settings, tick, leadTime } = this.scenario;
    const stock = baseStock(claims / tick, leadTime, settings.targetHitRatio);
    return Math.min(settings.maxReplicas, Math.max(settings.minReplicas, stock));
  }

  ticks(seconds: number): number {
    return Math.round(seconds / this.scenario.tick);
  }
}

describe('DemandScaler (properties)', () => {
  it('a constant rate converges to the model and stays there', () => {
    fc.assert(
      fc.property(scenarioArb, perTickArb, (scenario, claims) => {
        const run = new Run(scenario);
        const settle = run.ticks(scenario.settings.windowSeconds + scenario.settings.scaleDownStabilizationSeconds) + 1;
        run.steps(settle, claims);
        expect(run.replicas).toBe(run.model(claims));
        for (let i = 0; i < 20; i++) expect(run.step(claims)).toBe(run.model(claims));
      }),
      RUNS,
    );
  });

  it('a step up reaches the new level within one claim window, and never overshoots it', () => {
    fc.assert(
      fc.property(scenarioArb, perTickArb, fc.integer({ min: 1, max: 200 }), (scenario, low, extra) => {
        const high = low + extra;
        const run = new Run(scenario);
        run.steps(
          run.ticks(scenario.settings.windowSeconds + scenario.settings.scaleDownStabilizationSeconds) + 1,
          low,
        );
        const before = run.replicas;
        // Each observation after the step moves towards the new level (the window fills with the new rate).
        let previous = before;
        for (let i = 0; i < run.ticks(scenario.settings.windowSeconds); i++) {
          const replicas = run.step(high);
          expect(replicas).toBeGreaterThanOrEqual(previous);
          // A burst (implausible under the window's rate) is answered in full at the first observation.
          const windowTicks = run.ticks(scenario.settings.windowSeconds);
          const expected = (low * (windowTicks - 1) + high) / windowTicks;
          if (i === 0 && high > poissonQuantile(expected, 1 - BURST_SIGNIFICANCE))
            expect(replicas).toBe(run.model(high));
          previous = replicas;
        }
        expect(run.replicas).toBe(run.model(high));
        for (const { replicas } of run.history) expect(replicas).toBeLessThanOrEqual(run.model(high));
      }),
      RUNS,
    );
  });

  it('a step down holds the old level for the whole stabilisation window, then follows', () => {
    fc.assert(
      fc.property(scenarioArb, perTickArb, fc.integer({ min: 1, max: 200 }), (scenario, low, extra) => {
        const high = low + extra;
        const { windowSeconds, scaleDownStabilizationSeconds } = scenario.settings;
        const run = new Run(scenario);
        run.steps(run.ticks(windowSeconds + scaleDownStabilizationSeconds) + 1, high);
        const before = run.replicas;
        const stepAt = run.at;
        run.steps(run.ticks(windowSeconds + scaleDownStabilizationSeconds) + 1, low);
        for (const { at, replicas } of run.history)
          if (at > stepAt && at < stepAt + scaleDownStabilizationSeconds) expect(replicas).toBe(before);
        expect(run.replicas).toBe(run.model(low));
      }),
      RUNS,
    );
  });

  it('never flaps: no cut within the stabilisation window after a raise, whatever the claims', () => {
    fc.assert(
      fc.property(scenarioArb, fc.array(perTickArb, { minLength: 1, maxLength: 200 }), (scenario, claims) => {
        const run = new Run(scenario);
        let lastRaise = Number.NEGATIVE_INFINITY;
        for (const count of claims) {
          const before = run.replicas;
          const after = run.step(count);
          if (after > before) lastRaise = run.at;
          if (after < before)
            expect(run.at - lastRaise).toBeGreaterThanOrEqual(scenario.settings.scaleDownStabilizationSeconds);
        }
      }),
      RUNS,
    );
  });

  it('with lost claim counts it raises but never cuts, until a full window is counted again', () => {
    fc.assert(
      fc.property(scenarioArb, perTickArb, fc.integer({ min: 1, max: 50 }), (scenario, claims, lostTicks) => {
        const { windowSeconds, scaleDownStabilizationSeconds } = scenario.settings;
        const run = new Run(scenario);
        run.steps(run.ticks(windowSeconds + scaleDownStabilizationSeconds) + 1, claims);
        const before = run.replicas;
        let at = run.at;
        for (let i = 0; i < lostTicks; i++) {
          at += scenario.tick;
          // The counters came back empty: nothing counted, and the caller says so.
          const decision = run.scaler.step({
            at,
            current: run.replicas,
            warmClaims: 0,
            coldClaims: 0,
            countsComplete: false,
          });
          expect(decision.replicas).toBeGreaterThanOrEqual(before);
          run.replicas = decision.replicas;
        }
        run.at = at;
        // Counting again, at zero claims: the cut waits a claim window plus the stabilisation window.
        const resumedAt = run.at;
        for (let i = 0; i < run.ticks(windowSeconds + scaleDownStabilizationSeconds) + 2; i++) {
          const replicas = run.step(0);
          if (run.at < resumedAt + windowSeconds) expect(replicas).toBeGreaterThanOrEqual(before);
        }
        expect(run.replicas).toBe(run.model(0));
      }),
      RUNS,
    );
  });
});
