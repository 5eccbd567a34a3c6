// The demand quantile: how many claims arrive during one refill lead time, at
// a given probability, for Poisson arrivals. Exact summation of the pmf up to
// a mean of 400 (no overflow: terms are built by ratio from e^-mean, which
// stays above the double range's floor there); the normal approximation with
// a continuity correction beyond, where it is accurate to well under one unit.

const EXACT_MAX_MEAN = 400;

/** The smallest k with P(N ≤ k) ≥ p, N ~ Poisson(mean). mean ≥ 0, 0 < p < 1. */
export function poissonQuantile(mean: number, p: number): number {
  if (!(mean >= 0) || !Number.isFinite(mean)) throw new RangeError(`mean must be finite and ≥ 0 (got ${mean})`);
  if (!(p > 0 && p < 1)) throw new RangeError(`p must be in (0, 1) (got ${p})`);
  if (mean === 0) return 0;
  if (mean > EXACT_MAX_MEAN) return Math.max(0, Math.ceil(mean + normalQuantile(p) * Math.sqrt(mean) - 0.5));
  let term = Math.exp(-mean);
  let cdf = term;
  let k = 0;
  // The tail beyond mean + 40·√mean + 40 is far below any p < 1 a double can tell from 1.
  const limit = Math.ceil(mean + 40 * Math.sqrt(mean) + 40);
  while (cdf < p && k < limit) {
    k++;
    term *= mean / k;
    cdf += term;
  }
  return k;
}

/** P(N ≤ k), N ~ Poisson(mean), by summation (for tests and small means). */
export function poissonCdf(mean: number, k: number): number {
  if (k < 0) return 0;
  let term = Math.exp(-mean);
  let cdf = term;
  for (let i = 1; i <= k; i++) {
    term *= mean / i;
    cdf += term;
  }
  return Math.min(1, cdf);
}

/** The standard normal quantile (Acklam's rational approximation, relative error < 1.2e-9). */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError(`p must be in (0, 1) (got ${p})`);
  const a = [
    -39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269, -30.66479806614716, 2.506628277459239,
  ];
  const b = [-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155288572];
  const c = [
    -0.007784894002430293, -0.3224671290700398, -2.400758277161838, -2.549732539343734, 4.374664141464968,
    2.938163982698783,
  ];
  const d = [0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416];
  const low = 0.02425;
  const poly = (coefficients: number[], x: number): number => coefficients.reduce((acc, k) => acc * x + k, 0);
  if (p < low) {
    const q = Math.sqrt(-2 * Math.log(p));
    return poly(c, q) / (poly(d, q) * q + 1);
  }
  if (p > 1 - low) {
    const q = Math.sqrt(-2 * Math.log(1 - p));
    return -poly(c, q) / (poly(d, q) * q + 1);
  }
  const q = p - 0.5;
  const r = q * q;
  return (poly(a, r) * q) / (poly(b, r) * r + 1);
}
