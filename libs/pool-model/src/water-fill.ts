// The one fairness rule the spread uses everywhere: pour `amount` units over
// items so that the lowest levels rise first, and let the highest rank key
// take the last partial level. Costs O(items · log(amount + levels)), never
// O(amount), so it stays per-pool/per-node and never per-sandbox.
import { addAt } from './add-at.js';

/**
 * Units added per item. Item i starts at level base[i] and may take at most
 * cap[i] (Infinity allowed) more; the sum added is min(amount, Σcap). With
 * distinct keys the result does not depend on the order of the items.
 */
export function waterFill(
  base: ArrayLike<number>,
  cap: ArrayLike<number>,
  key: ArrayLike<number>,
  amount: number,
): Float64Array {
  const n = base.length;
  const added = new Float64Array(n);
  if (n === 0 || amount <= 0) return added;

  let total = 0;
  let minBase = Infinity;
  let maxBase = -Infinity;
  for (let i = 0; i < n; i++) {
    const c = cap[i] as number;
    if (c <= 0) continue;
    total += c;
    const b = base[i] as number;
    if (b < minBase) minBase = b;
    if (b > maxBase) maxBase = b;
  }
  if (total <= amount) {
    for (let i = 0; i < n; i++) added[i] = Math.max(0, cap[i] as number);
    return added;
  }

  const poured = (level: number): number => {
    let sum = 0;
    for (let i = 0; i < n; i++) {
      const c = cap[i] as number;
      if (c <= 0) continue;
      const room = level - (base[i] as number);
      if (room > 0) sum += room < c ? room : c;
    }
    return sum;
  };
  // The highest level that does not overflow `amount`. At maxBase + amount
  // either some item alone absorbs `amount` or every item is full (> amount),
  // so the answer lies in [minBase, maxBase + amount].
  let lo = minBase;
  let hi = maxBase + amount;
  while (lo < hi) {
    const mid = Math.floor((lo + hi + 1) / 2);
    if (poured(mid) <= amount) lo = mid;
    else hi = mid - 1;
  }

  let rest = amount;
  const atLevel: number[] = [];
  for (let i = 0; i < n; i++) {
    const c = cap[i] as number;
    if (c <= 0) continue;
    const b = base[i] as number;
    const room = lo - b;
    const a = room <= 0 ? 0 : room < c ? room : c;
    added[i] = a;
    rest -= a;
    if (b + a === lo && a < c) atLevel.push(i);
  }
  if (rest > 0) {
    // Fewer than atLevel.length units remain (else lo + 1 would have fit).
    atLevel.sort((x, y) => (key[y] as number) - (key[x] as number));
    for (let j = 0; j < rest; j++) addAt(added, atLevel[j] as number, 1);
  }
  return added;
}
