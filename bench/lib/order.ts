// The order paths take their turns in a round. A fixed order (or one only
// rotated) keeps each path behind the same neighbour every round, and what a
// neighbour leaves behind (its collections still running, caches it filled)
// then lands on the same path every time: shuffled each round, it spreads
// over all of them.

/**
 * `replicas` of each of `kinds`, in the random order their processes are started in: whatever a process gets from
 * when it starts (its place in memory, its neighbours) then falls on every kind alike.
 */
export function startOrder<T>(kinds: readonly T[], replicas: number): T[] {
  return inRandomOrder(kinds.flatMap((kind) => Array.from({ length: replicas }, () => kind)));
}

/** A copy of `items` in a random order (Fisher–Yates). */
export function inRandomOrder<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}
