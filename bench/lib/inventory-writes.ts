// Every NodeInventory write the apiserver stores, seen through a watch of the
// benchmark's own and sorted by what it carried against the node's previous
// version: a generation of a new leadership epoch (a new term's push), a later
// generation of the same epoch, new targets (a pool's target or the pool
// set), a pool's warm count reaching or leaving 0, a spec change, or none of
// those (a heartbeat: the publish time, warm or claimed counts). A benchmark
// reads the writes between two moments, e.g. per pool patch, to say what a
// change costs the apiserver and why.
import { epochOfGeneration, NodeInventoryType, type InventoryPool, type NodeInventory } from '@warmpool/api';
import { ResourceClient } from '@warmpool/kube';
import type { KubeConfig } from '@kubernetes/client-node';

export type WriteKind = 'new-epoch' | 'generation' | 'targets' | 'warm-zero' | 'spec' | 'heartbeat';

interface Write {
  at: number;
  node: string;
  kinds: readonly WriteKind[];
}

export interface WritesSummary {
  writes: number;
  /** Nodes written at least once. */
  nodes: number;
  /** Writes carrying each kind of change (one write may carry several). */
  byKind: Record<WriteKind, number>;
  /** Nodes written once, twice, three times or more. */
  perNode: { once: number; twice: number; more: number };
}

const poolId = (p: InventoryPool): string => `${p.template}|${p.net}|${p.size}`;

function kindsOf(old: NodeInventory, next: NodeInventory): WriteKind[] {
  const a = old.status ?? {};
  const b = next.status ?? {};
  const kinds: WriteKind[] = [];
  if (a.appliedGeneration !== b.appliedGeneration) {
    const sameEpoch =
      a.appliedGeneration !== undefined &&
      b.appliedGeneration !== undefined &&
      epochOfGeneration(a.appliedGeneration) === epochOfGeneration(b.appliedGeneration);
    kinds.push(sameEpoch ? 'generation' : 'new-epoch');
  }
  const before = new Map((a.pools ?? []).map((p) => [poolId(p), p]));
  const after = b.pools ?? [];
  if (before.size !== after.length || after.some((p) => before.get(poolId(p))?.target !== p.target))
    kinds.push('targets');
  if (after.some((p) => before.has(poolId(p)) && (before.get(poolId(p))?.warm === 0) !== (p.warm === 0)))
    kinds.push('warm-zero');
  if (JSON.stringify(old.spec) !== JSON.stringify(next.spec)) kinds.push('spec');
  if (kinds.length === 0) kinds.push('heartbeat');
  return kinds;
}

export class InventoryWriteLog {
  readonly #client: ResourceClient<NodeInventory>;
  readonly #controller = new AbortController();
  readonly #last = new Map<string, NodeInventory>();
  readonly #writes: Write[] = [];

  constructor(kubeConfig: KubeConfig) {
    this.#client = new ResourceClient<NodeInventory>(kubeConfig, NodeInventoryType);
  }

  /** Lists the inventories, then follows every later write until close(). */
  async start(): Promise<void> {
    const list = await this.#client.list();
    for (const item of list.items) this.#last.set(item.metadata.name ?? '', item);
    void this.#follow(list.resourceVersion);
  }

  async #follow(from: string): Promise<void> {
    const { signal } = this.#controller;
    let resourceVersion = from;
    while (!signal.aborted) {
      try {
        for await (const event of this.#client.watch({ resourceVersion, signal })) {
          resourceVersion = event.object.metadata?.resourceVersion ?? resourceVersion;
          if (event.type === 'BOOKMARK') continue;
          const name = event.object.metadata?.name ?? '';
          const old = this.#last.get(name);
          if (event.type === 'DELETED') this.#last.delete(name);
          else this.#last.set(name, event.object);
          if (event.type === 'MODIFIED' && old !== undefined)
            this.#writes.push({ at: performance.now(), node: name, kinds: kindsOf(old, event.object) });
        }
      } catch {
        // An ended watch is opened again from the last version seen; one too old is a gap the summary cannot see.
      }
    }
  }

  /** The writes seen from `from` to `to` (performance.now() times). */
  between(from: number, to: number): WritesSummary {
    const byKind: Record<WriteKind, number> = {
      'new-epoch': 0,
      generation: 0,
      targets: 0,
      'warm-zero': 0,
      spec: 0,
      heartbeat: 0,
    };
    const perNodeCount = new Map<string, number>();
    let writes = 0;
    for (const write of this.#writes) {
      if (write.at < from || write.at >= to) continue;
      writes += 1;
      for (const kind of write.kinds) byKind[kind] += 1;
      perNodeCount.set(write.node, (perNodeCount.get(write.node) ?? 0) + 1);
    }
    const counts = [...perNodeCount.values()];
    return {
      writes,
      nodes: perNodeCount.size,
      byKind,
      perNode: {
        once: counts.filter((c) => c === 1).length,
        twice: counts.filter((c) => c === 2).length,
        more: counts.filter((c) => c > 2).length,
      },
    };
  }

  close(): void {
    this.#controller.abort();
  }
}

/** One line: `2 000 writes on 1 000 nodes (generation 1 000, targets 1 000, …; per node 1×/2×/3+×: …)`. */
export function writesLine(summary: WritesSummary): string {
  const kinds = Object.entries(summary.byKind)
    .filter(([, n]) => n > 0)
    .map(([kind, n]) => `${kind} ${n}`)
    .join(', ');
  const { once, twice, more } = summary.perNode;
  return `${summary.writes} writes on ${summary.nodes} nodes (${kinds || 'none'}; per node 1× ${once}, 2× ${twice}, 3+× ${more})`;
}
