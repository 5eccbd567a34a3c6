// What pokes the warm-pool reconcile: which informer events can change what
// a run pushes or writes (pools, templates, inventories), which Node and agent
// pod changes move the addresses agents are called at, and the installed
// SandboxWarmPool CRD's status schema. Every replica keeps the caches; the
// reconciler ignores pokes while it does not drive.
import {
  POOL_OPTION_ANNOTATIONS,
  type CustomResourceDefinition,
  type KubeNode,
  type KubePod,
  type NodeInventory,
  type SandboxTemplate,
  type SandboxWarmPool,
} from '@warmpool/api';
import type { Informer } from '@warmpool/kube';
import { reportedSig } from '../../nodes/tracker.js';
import { nodeAddressesChanged, podPlacementChanged } from '../../nodes/addresses.js';
import type { WarmPoolReconciler } from './reconciler.js';

/**
 * Informer events poke the one reconcile. Updates that cannot change what is
 * pushed or written (a pool's own status write, a warm count moving on a
 * healthy node) are skipped; the periodic sample covers counts.
 */
export function watchForChanges(
  reconciler: WarmPoolReconciler,
  pools: Informer<SandboxWarmPool>,
  templates: Informer<SandboxTemplate>,
  inventories: Informer<NodeInventory>,
): void {
  pools.addEventHandler({
    onAdd: () => reconciler.pokeSpec('pool added'),
    onUpdate: (old, next) => {
      if (old !== next && poolChangeMatters(old, next)) reconciler.pokeSpec('pool changed');
    },
    onDelete: () => reconciler.pokeSpec('pool deleted'),
  });
  templates.addEventHandler({
    onAdd: () => reconciler.pokeSpec('template added'),
    onUpdate: (old, next) => {
      if (old === next) return;
      // The opt-in and net/size live in annotations, which do not bump the generation.
      if (
        old.metadata?.generation !== next.metadata?.generation ||
        JSON.stringify(old.metadata?.annotations ?? {}) !== JSON.stringify(next.metadata?.annotations ?? {})
      ) {
        reconciler.pokeSpec('template changed');
      }
    },
    onDelete: () => reconciler.pokeSpec('template deleted'),
  });
  // Every inventory event names the node whose record the next run reads again, poked or not: a heartbeat that
  // pokes nothing still carries the publish time that keeps the node fresh.
  inventories.addEventHandler({
    onAdd: (inventory) => {
      reconciler.noteNode(inventory.metadata?.name);
      reconciler.poke('node added');
    },
    onUpdate: (old, next) => {
      if (old === next) return;
      const name = next.metadata?.name ?? '';
      reconciler.noteNode(name);
      if (
        !reconciler.inPlacement(name) ||
        reconciler.unissued(next.status?.appliedGeneration) ||
        inventoryChangeMatters(old, next, () => reconciler.readsInventoryOf(name))
      ) {
        reconciler.poke('node changed');
      }
    },
    onDelete: (inventory) => {
      reconciler.noteNode(inventory.metadata?.name);
      reconciler.poke('node deleted');
    },
  });
}

/** The SandboxWarmPool CRD as it is now (undefined once deleted), at start and on every change. */
export function followStatusSchema(
  crds: Informer<CustomResourceDefinition>,
  onSchema: (crd: CustomResourceDefinition | undefined) => void,
): void {
  crds.addEventHandler({
    onAdd: (crd) => onSchema(crd),
    onUpdate: (old, next) => {
      if (old !== next) onSchema(next);
    },
    onDelete: () => onSchema(undefined),
  });
}

/** A Node's addresses, or an agent pod's IP or node, decide which agent addresses are called. */
export function watchAddressVouchers(
  reconciler: WarmPoolReconciler,
  nodes: Informer<KubeNode>,
  agentPods: Informer<KubePod> | undefined,
): void {
  // A Node vouches for the addresses of the inventory of the same name; an agent pod for the node it runs on.
  nodes.addEventHandler({
    onAdd: (node) => {
      reconciler.noteNode(node.metadata?.name);
      reconciler.poke('node object added');
    },
    onUpdate: (old, next) => {
      if (old === next || !nodeAddressesChanged(old, next)) return;
      reconciler.noteNode(next.metadata?.name);
      reconciler.poke('node addresses changed');
    },
    onDelete: (node) => {
      reconciler.noteNode(node.metadata?.name);
      reconciler.poke('node object deleted');
    },
  });
  agentPods?.addEventHandler({
    onAdd: (pod) => {
      reconciler.noteNode(pod.spec?.nodeName);
      reconciler.poke('agent pod added');
    },
    onUpdate: (old, next) => {
      if (old === next || !podPlacementChanged(old, next)) return;
      reconciler.noteNode(old.spec?.nodeName);
      reconciler.noteNode(next.spec?.nodeName);
      reconciler.poke('agent pod changed');
    },
    onDelete: (pod) => {
      reconciler.noteNode(pod.spec?.nodeName);
      reconciler.poke('agent pod deleted');
    },
  });
}

/**
 * Whether an inventory update can change what a run decides. After a new
 * term's pushes each node republishes its inventory with the targets it was
 * just pushed and their generation (later pushes of a term ride on its next
 * write): one event per node within seconds, and a full reconcile for each
 * (coalesced, back to back) would keep the loop busy without changing
 * anything. So: the new
 * appliedGeneration alone matters only when no leader issued it (the node
 * leaves placement; see unissued() at the call), and new targets matter only
 * when runs see the node through its inventory, i.e. no fresher answer of its
 * agent stands in for it (the probe every interval compares those).
 */
function inventoryChangeMatters(old: NodeInventory, next: NodeInventory, readsInventory: () => boolean): boolean {
  const a = old.status ?? {};
  const b = next.status ?? {};
  if (old.spec?.address !== next.spec?.address) return true;
  if (a.capacity !== b.capacity || a.draining !== b.draining || a.atCapacity !== b.atCapacity) return true;
  if (b.capacity !== undefined && a.claimed !== b.claimed) return true;
  return readsInventory() && reportedSig(a.pools ?? []) !== reportedSig(b.pools ?? []);
}

/**
 * Whether a pool's update can change what a run pushes or writes: its spec (the generation), its deletion, or the
 * sandboxd options its annotations set (plan.ts), which do not bump the generation. Not its status (our own writes)
 * nor any other annotation or label.
 */
export function poolChangeMatters(old: SandboxWarmPool, next: SandboxWarmPool): boolean {
  return (
    old.metadata?.generation !== next.metadata?.generation ||
    old.metadata?.deletionTimestamp !== next.metadata?.deletionTimestamp ||
    Object.values(POOL_OPTION_ANNOTATIONS).some(
      (annotation) => old.metadata?.annotations?.[annotation] !== next.metadata?.annotations?.[annotation],
    )
  );
}
