// A NodeInventory as the spread sees it.
import type { NodeInventory } from '@warmpool/api';
import type { SpreadNode } from './targets.js';

/**
 * Room is capacity minus claimed: warm sandboxes are exactly what the targets
 * place, so they do not take room from the targets; claimed ones hold their
 * slot until released. Unknown capacity is unbounded (nothing to cap by).
 * A draining node is not eligible; `eligible: false` (say, a stale
 * inventory) keeps it out too.
 */
export function spreadNodeOf(inventory: NodeInventory, options: { eligible?: boolean } = {}): SpreadNode {
  const status = inventory.status ?? {};
  const name = inventory.spec?.nodeName || inventory.metadata?.name;
  if (name === undefined || name === '') throw new TypeError('spreadNodeOf: the NodeInventory has neither spec.nodeName nor metadata.name');
  const room = status.capacity === undefined ? Infinity : Math.max(0, status.capacity - (status.claimed ?? 0));
  return { name, room, eligible: options.eligible !== false && status.draining !== true };
}
