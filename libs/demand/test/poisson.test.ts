import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { baseStock, normalQuantile, poissonCdf, poissonQuantile } from '../src/index.js';

describe('poissonQuantile', () => {
  it('is the smallest k whose cdf reaches p', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0.001, max: 200, noNaN: true }),
        fc.double({ min: 0.01, max: 0.9999, noNaN: true }),
        (mean, p) => {
          const k = poissonQuantile(mean, p);
          expect(poissonCdf(mean, k)).toBeGreaterThanOrEqual(p - 1e-12);
          if (k > 0) expect(poissonCdf(mean, k - 1)).toBeLessThan(p + 1e-12);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('agrees with the normal approximation within a unit or two where it switches over', () => {
    const exact = poissonQuantile(400, 0.99);
    const approx = poissonQuantile(401, 0.99);
    expect(Math.abs(approx - exact)).toBeLessThanOrEqual(2);
  });

  it('answers 0 for no demand and refuses nonsense', () => {
    expect(poissonQuantile(0, 0.99)).toBe(0);
    expect(() => poissonQuantile(-1, 0.5)).toThrow(RangeError);
    expect(() => poissonQuantile(1, 1)).toThrow(RangeError);
    expect(() => poissonQuantile(Number.NaN, 0.5)).toThrow(RangeError);
  });

  it('normalQuantile is symmetric and knows its landmarks', () => {
    expect(normalQuantile(0.5)).toBeCloseTo(0, 9);
    expect(normalQuantile(0.975)).toBeCloseTo(1.959964, 5);
    expect(normalQuantile(0.01)).toBeCloseTo(-normalQuantile(0.99), 9);
  });
});

describe('baseStock', () => {
  it('is quantile + 1: one warm sandbox for a trickle, more as rate × lead time grows', () => {
    expect(baseStock(0, 5, 0.99)).toBe(0);
    expect(baseStock(0.001, 1, 0.99)).toBe(1);
    // 10 claims/s × 2 s: Poisson(20) at 0.99 is 31, so 32 replicas.
    expect(baseStock(10, 2, 0.99)).toBe(32);
  });

  it('never falls as the rate, the lead time or the target grows', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 100, noNaN: true }),
        fc.double({ min: 0, max: 30, noNaN: true }),
        fc.double({ min: 0.5, max: 0.999, noNaN: true }),
        fc.double({ min: 1, max: 2, noNaN: true }),
        (rate, lead, target, factor) => {
          const base = baseStock(rate, lead, target);
          expect(baseStock(rate * factor, lead, target)).toBeGreaterThanOrEqual(base);
          expect(baseStock(rate, lead * factor, target)).toBeGreaterThanOrEqual(base);
          expect(baseStock(rate, lead, Math.min(0.9999, target * factor))).toBeGreaterThanOrEqual(base);
        },
      ),
      { numRuns: 300 },
    );
  });
});
