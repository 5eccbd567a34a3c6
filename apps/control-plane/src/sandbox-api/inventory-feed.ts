// NodeInventory → the Sandbox view: each node's published entries become
// sandbox facts (entries without a warmpool claim_ref, libs/api
// node-claim-ref, were not claimed through warmpool and are not Sandboxes). The pool of an entry is
// the SandboxWarmPool of its namespace whose template names the entry's key.
import {
  poolKeyId,
  type InventoryEntry,
  type NodeInventory,
  type PoolKey,
  type SandboxTemplate,
  type SandboxWarmPool,
  claimNameOf,
  parseNodeClaimRef,
} from '@warmpool/api';
import type { Informer } from '@warmpool/kube';
import { poolKeyOf } from '@warmpool/pool-model';
import type { SandboxFacts } from './sandbox-object.js';
import type { NodeReport, SandboxView } from './view.js';

export interface InventoryFeedOptions {
  view: SandboxView;
  inventories: Informer<NodeInventory>;
  pools: Informer<SandboxWarmPool>;
  templates: Informer<SandboxTemplate>;
}

/** Follows the informers into the view; answers the unsubscribe. */
export function followInventories(options: InventoryFeedOptions): () => void {
  const { view, inventories } = options;
  const pools = new PoolResolver(options.pools, options.templates);
  const apply = (inventory: NodeInventory): void => {
    const node = inventory.metadata?.name;
    if (node === undefined) return;
    view.applyNode(node, reportOf(node, inventory, pools));
  };
  const stops = [
    inventories.addEventHandler({
      onAdd: apply,
      onUpdate: (old, next) => {
        if (old !== next) apply(next);
      },
      onDelete: (inventory) => {
        const node = inventory.metadata?.name;
        if (node !== undefined) view.applyNode(node, undefined);
      },
    }),
    options.pools.addEventHandler({
      onAdd: () => pools.invalidate(),
      onUpdate: () => pools.invalidate(),
      onDelete: () => pools.invalidate(),
    }),
    options.templates.addEventHandler({
      onAdd: () => pools.invalidate(),
      onUpdate: () => pools.invalidate(),
      onDelete: () => pools.invalidate(),
    }),
  ];
  return () => {
    for (const stop of stops) stop();
  };
}

export function reportOf(
  node: string,
  inventory: NodeInventory,
  pools: { poolOf(namespace: string, key: PoolKey): string | undefined },
): NodeReport {
  const status = inventory.status ?? {};
  const publishedAtMs = status.publishedAt === undefined ? undefined : Date.parse(status.publishedAt);
  const entries: SandboxFacts[] = [];
  for (const entry of status.entries ?? []) {
    const facts = factsOf(node, entry, pools);
    if (facts !== undefined) entries.push(facts);
  }
  return {
    publishedAtMs: Number.isFinite(publishedAtMs) ? publishedAtMs : undefined,
    // An agent that publishes no entries at all says nothing about which sandboxes are gone.
    partial: status.entries === undefined || status.entriesTruncated === true,
    entries,
  };
}

function factsOf(
  node: string,
  entry: InventoryEntry,
  pools: { poolOf(namespace: string, key: PoolKey): string | undefined },
): SandboxFacts | undefined {
  const owner = parseNodeClaimRef(entry.claimRef);
  if (owner === undefined) return undefined;
  const { namespace, name } = claimNameOf(owner);
  const key = { template: entry.template, net: entry.net, size: entry.size };
  const pool = pools.poolOf(namespace, key);
  return {
    namespace,
    name,
    id: entry.id,
    node,
    deadline: entry.deadline,
    key,
    ...(pool !== undefined ? { pool } : {}),
    ...(entry.claimedAt !== undefined ? { claimedAt: entry.claimedAt } : {}),
  };
}

/** (namespace, pool key) → the pool's name, rebuilt lazily after any pool or template change. */
class PoolResolver {
  readonly #pools: Informer<SandboxWarmPool>;
  readonly #templates: Informer<SandboxTemplate>;
  #byKey: Map<string, string> | undefined;

  constructor(pools: Informer<SandboxWarmPool>, templates: Informer<SandboxTemplate>) {
    this.#pools = pools;
    this.#templates = templates;
  }

  invalidate(): void {
    this.#byKey = undefined;
  }

  poolOf(namespace: string, key: PoolKey): string | undefined {
    this.#byKey ??= this.#build();
    return this.#byKey.get(`${namespace}|${poolKeyId(key)}`);
  }

  #build(): Map<string, string> {
    const byKey = new Map<string, string>();
    // Pools sharing a key: the first by name answers (their sandboxes cannot be told apart on the node).
    const pools = this.#pools.lister
      .list()
      .slice()
      .sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
    for (const pool of pools) {
      const namespace = pool.metadata?.namespace;
      const name = pool.metadata?.name;
      const templateName = pool.spec?.sandboxTemplateRef?.name;
      if (namespace === undefined || name === undefined || templateName === undefined) continue;
      const template = this.#templates.lister.get(namespace, templateName);
      if (template === undefined) continue;
      let key: PoolKey;
      try {
        key = poolKeyOf(template);
      } catch {
        continue;
      }
      const id = `${namespace}|${poolKeyId(key)}`;
      if (!byKey.has(id)) byKey.set(id, name);
    }
    return byKey;
  }
}
