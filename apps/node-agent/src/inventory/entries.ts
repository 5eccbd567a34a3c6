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
  parseSandboxRows,
  poolKeyId,
  type InventoryEntry,
  type SandboxRows,
  type TolerantSandboxRow,
} from '@warmpool/api';
import type { Logger } from '@warmpool/runtime';
import type { SandboxdClient } from '../sandboxd/client.js';

export interface PublishedEntries {
  entries: InventoryEntry[];
  truncated: boolean;
}

export function entriesOf(rows: readonly TolerantSandboxRow[], cap = MAX_INVENTORY_ENTRIES): PublishedEntries {
  // A row without claimed_at (recorded before sandboxd had the field) is older than any that has one: it sorts first.
  const sorted = rows.slice().sort((a, b) => {
    const at = a.claimed_at ?? '';
    const bt = b.claimed_at ?? '';
    return at < bt ? -1 : at > bt ? 1 : a.id < b.id ? -1 : 1;
  });
  const kept = sorted.slice(0, cap).map((row): InventoryEntry => ({
    id: row.id,
    template: row.key.template,
    net: row.key.net,
    size: row.key.size,
    ...(row.claim_ref !== undefined ? { claimRef: row.claim_ref } : {}),
    deadline: row.deadline,
    ...(row.claimed_at !== undefined ? { claimedAt: row.claimed_at } : {}),
  }));
  return { entries: kept, truncated: rows.length > cap };
}

/** Claimed sandboxes per pool key id: SandboxEnv status shows them as running. */
export function claimedByKeyOf(rows: readonly TolerantSandboxRow[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const row of rows) {
    const id = poolKeyId(row.key);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/**
 * Reads the node's claims from sandboxd, row by row: a row without what warmpool depends on (id, deadline, key) is
 * skipped and counted, never the whole list; rejects only when sandboxd does not answer 200 with a list.
 */
export async function readNodeClaims(sandboxd: SandboxdClient): Promise<SandboxRows> {
  const answer = await sandboxd.listSandboxes();
  const body = await text(answer.body);
  if (answer.status !== 200) throw new Error(`sandboxd GET /v1/sandboxes answered HTTP ${answer.status}`);
  return parseSandboxRows(JSON.parse(body));
}

/** readNodeClaims as the publisher calls it: the rows, with skipped rows logged once per process (not once per write). */
export function nodeClaimsReader(sandboxd: SandboxdClient, logger: Logger): () => Promise<TolerantSandboxRow[]> {
  let logged = false;
  return async () => {
    const { rows, skipped, firstProblem } = await readNodeClaims(sandboxd);
    if (skipped > 0 && !logged) {
      logged = true;
      logger.warn(
        'sandboxd listed claims warmpool cannot read (no id, deadline or key): they are left out of the inventory',
        {
          skipped,
          problem: firstProblem,
        },
      );
    }
    return rows;
  };
}
