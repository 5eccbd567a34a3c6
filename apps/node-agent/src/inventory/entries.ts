// The node's claims as the NodeInventory shows them: the per-sandbox entries and
// the per-pool claimed counts, both from one read of sandboxd's GET /v1/sandboxes
// when the inventory is written — never a write per claim. Entries are capped
// at MAX_INVENTORY_ENTRIES so a full node stays far below etcd's object limit; past the cap the oldest claims are kept
// (the control
// plane learns the newest from the claim index's events) and
// entriesTruncated says that some are missing.
import { text } from 'node:stream/consumers';
import {
  MAX_INVENTORY_ENTRIES,
  poolKeyId,
  sandboxListSchema,
  type InventoryEntry,
  type SandboxRow,
} from '@warmpool/api';
import type { SandboxdClient } from '../sandboxd/client.js';

export interface PublishedEntries {
  entries: InventoryEntry[];
  truncated: boolean;
}

export function entriesOf(rows: readonly SandboxRow[], cap = MAX_INVENTORY_ENTRIES): PublishedEntries {
  const sorted = rows
    .slice()
    .sort((a, b) => (a.claimed_at < b.claimed_at ? -1 : a.claimed_at > b.claimed_at ? 1 : a.id < b.id ? -1 : 1));
  const kept = sorted.slice(0, cap).map((row): InventoryEntry => ({
    id: row.id,
    template: row.key.template,
    net: row.key.net,
    size: row.key.size,
    ...(row.claim_ref !== undefined ? { claimRef: row.claim_ref } : {}),
    deadline: row.deadline,
    claimedAt: row.claimed_at,
  }));
  return { entries: kept, truncated: rows.length > cap };
}

/** Claimed sandboxes per pool key id: SandboxEnv status shows them as running. */
export function claimedByKeyOf(rows: readonly SandboxRow[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const row of rows) {
    const id = poolKeyId(row.key);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/** Reads the node's claims from sandboxd; rejects when it does not answer 200 with a readable list. */
export async function readNodeClaims(sandboxd: SandboxdClient): Promise<SandboxRow[]> {
  const answer = await sandboxd.listSandboxes();
  const body = await text(answer.body);
  if (answer.status !== 200) throw new Error(`sandboxd GET /v1/sandboxes answered HTTP ${answer.status}`);
  return sandboxListSchema.parse(JSON.parse(body)).sandboxes;
}
