// Where each claim of a batch goes. Candidates are the nodes of the latest
// snapshot (their NodeInventory, or the fresher answer of their agent the
// warm-pool driver holds), with the warm count of the key each reported, less
// what this replica has taken from them since that report.
//
// Among nodes with warm sandboxes of the key: power of two choices (two nodes
// at random, the one with more warm left). Never "the node with the most
// warm": every claim until the next report would land on that one node and
// drain it while the others stay full. With no warm anywhere: a cold boot on
// the least-loaded node that has room.
import { poolKeyId, type PoolKey } from '@warmpool/api';
import type { NodeSnapshot } from '../nodes/snapshots.js';
import type { ClaimTier } from './claim-service.js';

export interface Choice {
  node: NodeSnapshot;
  tier: ClaimTier;
}

interface Taken {
  stamp: string;
  warm: Map<string, number>;
  claims: number;
}

export class Placement {
  readonly #snapshots: () => readonly NodeSnapshot[];
  readonly #random: () => number;
  readonly #taken = new Map<string, Taken>();

  constructor(snapshots: () => readonly NodeSnapshot[], random: () => number = Math.random) {
    this.#snapshots = snapshots;
    this.#random = random;
  }

  /** A round of choices over one snapshot (one per batch): cheaper than re-reading the nodes per claim. */
  round(key: PoolKey): PlacementRound {
    const nodes = this.#snapshots();
    const live = new Set<string>();
    for (const node of nodes) {
      live.add(node.name);
      const taken = this.#taken.get(node.name);
      if (taken === undefined || taken.stamp !== node.stamp)
        this.#taken.set(node.name, { stamp: node.stamp, warm: new Map(), claims: 0 });
    }
    for (const name of this.#taken.keys()) if (!live.has(name)) this.#taken.delete(name);
    return new PlacementRound(nodes, poolKeyId(key), this.#taken, this.#random);
  }
}

export class PlacementRound {
  readonly #nodes: readonly NodeSnapshot[];
  readonly #keyId: string;
  readonly #taken: Map<string, Taken>;
  readonly #random: () => number;
  readonly #excluded = new Set<string>();

  constructor(nodes: readonly NodeSnapshot[], keyId: string, taken: Map<string, Taken>, random: () => number) {
    this.#nodes = nodes;
    this.#keyId = keyId;
    this.#taken = taken;
    this.#random = random;
  }

  get candidates(): number {
    return this.#nodes.length - this.#excluded.size;
  }

  /** The node refused for a reason that holds for the rest of the batch (full, draining). */
  exclude(name: string): void {
    this.#excluded.add(name);
  }

  /** Warm sandboxes of the key left on the node, by this replica's account. */
  warmLeft(node: NodeSnapshot): number {
    return (node.warm.get(this.#keyId) ?? 0) - (this.#taken.get(node.name)?.warm.get(this.#keyId) ?? 0);
  }

  /** Chooses a node and counts the claim against it; `avoid` are nodes this claim already tried. */
  choose(avoid: ReadonlySet<string> = new Set()): Choice | undefined {
    const usable = (node: NodeSnapshot): boolean => !this.#excluded.has(node.name) && !avoid.has(node.name);
    const warm = this.#nodes.filter((node) => usable(node) && this.warmLeft(node) > 0);
    if (warm.length > 0) {
      const node = this.#twoChoices(warm);
      this.#take(node, true);
      return { node, tier: 'warm' };
    }
    let best: NodeSnapshot | undefined;
    for (const node of this.#nodes) {
      if (!usable(node) || this.#coldRoomLeft(node) <= 0) continue;
      if (best === undefined || this.#load(node) < this.#load(best)) best = node;
    }
    if (best === undefined) return undefined;
    this.#take(best, false);
    return { node: best, tier: 'cold' };
  }

  #twoChoices(nodes: readonly NodeSnapshot[]): NodeSnapshot {
    if (nodes.length === 1) return nodes[0] as NodeSnapshot;
    const i = Math.floor(this.#random() * nodes.length);
    let j = Math.floor(this.#random() * (nodes.length - 1));
    if (j >= i) j++;
    const a = nodes[i] as NodeSnapshot;
    const b = nodes[j] as NodeSnapshot;
    const wa = this.warmLeft(a);
    const wb = this.warmLeft(b);
    if (wa !== wb) return wa > wb ? a : b;
    return this.#load(a) <= this.#load(b) ? a : b;
  }

  #load(node: NodeSnapshot): number {
    return node.claimed + (this.#taken.get(node.name)?.claims ?? 0);
  }

  #coldRoomLeft(node: NodeSnapshot): number {
    return node.coldRoom - (this.#taken.get(node.name)?.claims ?? 0);
  }

  #take(node: NodeSnapshot, warm: boolean): void {
    const taken = this.#taken.get(node.name);
    if (taken === undefined) return;
    taken.claims++;
    if (warm) taken.warm.set(this.#keyId, (taken.warm.get(this.#keyId) ?? 0) + 1);
  }
}
