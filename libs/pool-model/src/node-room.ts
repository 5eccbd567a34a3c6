// How many warm sandboxes a node can still take, across all its pools.

/**
 * Room is capacity minus claimed: warm sandboxes are exactly what the targets
 * place, so they do not take room from the targets; claimed ones hold their
 * slot until released. Unknown capacity is unbounded (nothing to cap by);
 * room is never negative.
 */
export function nodeRoom(capacity: number | undefined, claimed: number): number {
  return capacity === undefined ? Infinity : Math.max(0, capacity - claimed);
}
