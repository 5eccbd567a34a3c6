// A node's owner address (where its sandboxes are reached) for a claim this
// replica did not see answered: one adopted from a node's claim_ref after its
// worker died, or rebuilt from a node's list, carries none, and a fresh
// replica has cached none. The node's agent publishes it in its NodeInventory,
// so every replica reads it from the cache it already keeps. Data only: it is
// handed to clients, never called with the fleet token, so no address check.
import { normalizeOwnerAddr, ownerAddrOf, type NodeInventory } from '@warmpool/api';
import type { Lister } from '@warmpool/kube';

/** The owner address a node's inventory publishes; undefined when it has none yet (no claim answered there). */
export type NodeOwnerAddr = (node: string) => string | undefined;

export function nodeOwnerAddrs(inventories: Lister<NodeInventory>): NodeOwnerAddr {
  // An older agent may have published sandboxd's URL form (it passes the host:port rule): host:port only, here too.
  return (node) => normalizeOwnerAddr(ownerAddrOf(inventories.get(node)));
}
