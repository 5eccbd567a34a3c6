// Where a node's sandboxes are reached: sandboxd's `owner_addr` (host:port),
// which every claim answer of the node carries. The node agent publishes it in
// its NodeInventory (status.ownerAddr), so any control-plane replica knows it
// for a node without having seen one of its claims (a claim adopted from a
// node's list carries none). The schema is the CRD's: a value it refuses
// would fail the whole status write, so the agent publishes nothing else.
import { z } from 'zod';
import type { NodeInventory } from './crds.js';

export const OWNER_ADDR_MAX_LENGTH = 512;

export const ownerAddrSchema = z
  .string()
  .min(3)
  .max(OWNER_ADDR_MAX_LENGTH)
  .regex(/^.+:[0-9]{1,5}$/, 'must be host:port');

/** The node's owner address as its inventory publishes it; undefined when absent or not a host:port. */
export function ownerAddrOf(inventory: Pick<NodeInventory, 'status'> | undefined): string | undefined {
  const parsed = ownerAddrSchema.safeParse(inventory?.status?.ownerAddr);
  return parsed.success ? parsed.data : undefined;
}
