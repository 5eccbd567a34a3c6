// The per-sandbox entries the agent publishes in its NodeInventory (what the
// control plane's Sandbox API lists): every claim under the cap, the oldest
// past it.
import { MAX_INVENTORY_ENTRIES, type SandboxRow } from '@warmpool/api';
import { entriesOf } from '@warmpool/node-agent';
import { describe, expect, it } from 'vitest';

const row = (i: number): SandboxRow => ({
  id: `sb_${i}`,
  key: { template: 'img', net: 'none', size: 'small' },
  deadline: '2026-12-01T11:00:00Z',
  claimed_at: new Date(Date.UTC(2026, 11, 1, 10, 0, i)).toISOString(),
  claim_ref: `team/job-${i}`,
});

describe('inventory entries', () => {
  it('publishes every claim with its claim_ref and claim time while under the cap, oldest first', () => {
    expect(entriesOf([row(2), row(1)])).toEqual({
      truncated: false,
      entries: [1, 2].map((i) => ({
        id: `sb_${i}`,
        template: 'img',
        net: 'none',
        size: 'small',
        claimRef: `team/job-${i}`,
        deadline: '2026-12-01T11:00:00Z',
        claimedAt: row(i).claimed_at,
      })),
    });
  });

  it('keeps the oldest MAX_INVENTORY_ENTRIES and says it truncated (the claim index covers the newest)', () => {
    const rows = Array.from({ length: MAX_INVENTORY_ENTRIES + 10 }, (_, i) => row(MAX_INVENTORY_ENTRIES + 9 - i));
    const published = entriesOf(rows);
    expect(published.truncated).toBe(true);
    expect(published.entries).toHaveLength(MAX_INVENTORY_ENTRIES);
    expect(published.entries[0]?.id).toBe('sb_0');
  });
});
