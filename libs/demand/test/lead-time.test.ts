import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ClaimWindow, LeadTimeEstimator } from '../src/index.js';

describe('LeadTimeEstimator', () => {
  it('keeps the configured value until a boot is seen', () => {
    const estimator = new LeadTimeEstimator({ initialSeconds: 7 });
    estimator.observe(0, 0, 0);
    estimator.observe(1, 3, 0);
    expect(estimator.seconds).toBe(7);
    expect(estimator.observed).toBe(false);
  });

  it("reads a steady refill pipeline's lead time by Little's law", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100 }), fc.constantFrom(0.5, 1, 3, 10), (perSecond, lead) => {
        const estimator = new LeadTimeEstimator({ initialSeconds: 60, smoothingSeconds: 5 });
        // perSecond boots complete each second while perSecond × lead refills are owed.
        for (let t = 0; t <= 120; t++) estimator.observe(t, perSecond * lead, perSecond);
        expect(estimator.seconds).toBeCloseTo(lead, 3);
        expect(estimator.observed).toBe(true);
      }),
    );
  });

  it('stays within its bounds whatever it is fed', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: -5, max: 1000 }), fc.integer({ min: -5, max: 50 })), { maxLength: 50 }),
        (samples) => {
          const estimator = new LeadTimeEstimator({ minSeconds: 0.5, maxSeconds: 30 });
          samples.forEach(([owed, booted], t) => estimator.observe(t, owed, booted));
          expect(estimator.seconds).toBeGreaterThanOrEqual(0.5);
          expect(estimator.seconds).toBeLessThanOrEqual(30);
        },
      ),
    );
  });
});

describe('ClaimWindow', () => {
  it('reads the rate over the window, or over the history there is', () => {
    const window = new ClaimWindow(10);
    window.add(1, 4, 0, 0);
    expect(window.rate(1, 10)).toBe(4);
    for (let t = 2; t <= 20; t++) window.add(t, 1, 1, t - 1);
    expect(window.rate(20, 10)).toBe(2);
    expect(window.hitRatio(20, 10)).toBe(0.5);
    expect(window.counts(20, 5)).toEqual({ warm: 5, cold: 5 });
  });

  it('refuses time going backwards', () => {
    const window = new ClaimWindow(10);
    window.add(5, 1, 0, 4);
    expect(() => window.add(4, 1, 0, 3)).toThrow(RangeError);
  });
});
