// Placement of claims: power of two choices among nodes with warm sandboxes of
// the key, never always the node with the most warm; counts taken since the
// last report; a cold boot on the least-loaded node with room when no node has
// warm.
import { describe, expect, it } from 'vitest';
import type { NodeInventory } from '@warmpool/api';
import { inventoryObject } from '@warmpool/harness';
import type { Lister } from '@warmpool/kube';
import type { AddressCheck } from '../../src/nodes/addresses.js';
import type { NodeView } from '../../src/nodes/tracker.js';
import { nodeSnapshotSource } from '../../src/nodes/snapshots.js';
import { Placement } from '../../src/provisioning/placement.js';
import type { NodeSnapshot } from '../../src/nodes/snapshots.js';

const KEY = { template: 'img', net: 'none', size: 'small' };
const KEY_ID = 'img|none|small';

function node(
  name: string,
  warm: number,
  options: { claimed?: number; coldRoom?: number; stamp?: string } = {},
): NodeSnapshot {
  return {
    name,
    address: `${name}:7071`,
    stamp: options.stamp ?? 's1',
    warm: new Map([[KEY_ID, warm]]),
    claimed: options.claimed ?? 0,
    coldRoom: options.coldRoom ?? Infinity,
  };
}

/** A seeded PRNG (mulberry32), so the specs are repeatable. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('Placement', () => {
  it('takes warm sandboxes only from nodes that have them, and no more than they reported', () => {
    const placement = new Placement(() => [node('a', 2), node('b', 0), node('c', 1)], seeded(1));
    const round = placement.round(KEY);
    const chosen = [round.choose(), round.choose(), round.choose()].map((c) => `${c?.node.name}:${c?.tier}`);
    expect(chosen.sort()).toEqual(['a:warm', 'a:warm', 'c:warm']);
    // No warm left anywhere: cold, on the least-loaded node.
    expect(round.choose()).toMatchObject({ tier: 'cold', node: { name: 'b' } });
  });

  it('spreads a burst over the nodes rather than draining the one with the most warm', () => {
    const nodes = [node('a', 50), node('b', 40), node('c', 40), node('d', 40)];
    const round = new Placement(() => nodes, seeded(7)).round(KEY);
    const counts = new Map<string, number>();
    for (let i = 0; i < 40; i++) {
      const name = round.choose()?.node.name ?? '';
      counts.set(name, (counts.get(name) ?? 0) + 1);
    }
    // "Most warm" would send all 40 to a (it stays the richest for the first 10 and ties after); two choices spread
    // them.
    expect(counts.get('a') ?? 0).toBeLessThan(40);
    expect([...counts.keys()].length).toBeGreaterThanOrEqual(3);
  });

  it('remembers what it took until the node reports again (a new stamp)', () => {
    let nodes = [node('a', 1)];
    const placement = new Placement(() => nodes, seeded(3));
    expect(placement.round(KEY).choose()?.tier).toBe('warm');
    expect(placement.round(KEY).choose()?.tier).toBe('cold'); // same report: the one warm is taken
    nodes = [node('a', 1, { stamp: 's2' })];
    expect(placement.round(KEY).choose()?.tier).toBe('warm');
  });

  it('boots cold only where there is room, on the least-loaded node', () => {
    const round = new Placement(
      () => [
        node('a', 0, { claimed: 5, coldRoom: 10 }),
        node('b', 0, { claimed: 1, coldRoom: 1 }),
        node('c', 0, { claimed: 0, coldRoom: 0 }),
      ],
      seeded(5),
    ).round(KEY);
    expect(round.choose()?.node.name).toBe('b');
    expect(round.choose()?.node.name).toBe('a'); // b is out of room now
  });

  it('answers nothing when every node is excluded or avoided', () => {
    const round = new Placement(() => [node('a', 3), node('b', 3)], seeded(9)).round(KEY);
    round.exclude('a');
    expect(round.choose(new Set(['b']))).toBeUndefined();
    expect(round.choose()?.node.name).toBe('b');
  });
});

describe('the nodes placement sees', () => {
  const NOW = Date.parse('2030-01-01T00:00:10Z');
  const clock = { now: () => NOW };
  function inventory(
    name: string,
    warm: number,
    publishedAt: string,
    extra: Parameters<typeof inventoryObject>[1] = {},
  ): NodeInventory {
    const object = inventoryObject(name, { publishedAt, capacity: 10, ...extra });
    if (object.status)
      object.status.pools = [{ template: 'img', net: 'none', size: 'small', target: 2, warm, refilling: 0 }];
    return object;
  }
  const vouchAll = (): AddressCheck => () => undefined;
  const lister = (items: NodeInventory[]): Lister<NodeInventory> =>
    ({ list: () => items }) as unknown as Lister<NodeInventory>;
  function view(name: string, warm: number, at: number, eligible = true): NodeView {
    const pools = [{ template: 'img', net: 'none', size: 'small', target: 2, warm, refilling: 2 - warm }];
    return {
      name,
      address: `${name}.test:7071`,
      eligible,
      exclusion: eligible ? undefined : 'failing',
      room: 10,
      failures: 0,
      lastError: undefined,
      appliedGeneration: undefined,
      addressProblem: undefined,
      observation: { pools, claimed: 0, draining: false, atCapacity: false, at, source: 'agent', reported: '' },
    };
  }

  it('takes fresh inventories where the driver has no view, and leaves stale ones out', () => {
    const source = nodeSnapshotSource({
      inventories: lister([inventory('a', 2, '2030-01-01T00:00:09Z'), inventory('b', 2, '2030-01-01T00:00:00Z')]),
      driverViews: () => [],
      addresses: vouchAll,
      staleAfterMs: 5_000,
      clock,
    });
    expect(source().map((n) => [n.name, n.warm.get(KEY_ID)])).toEqual([['a', 2]]);
  });

  it('where the driver has no view, never uses an inventory whose address its Node does not vouch for', () => {
    const source = nodeSnapshotSource({
      inventories: lister([inventory('a', 2, '2030-01-01T00:00:09Z'), inventory('forged', 2, '2030-01-01T00:00:09Z')]),
      driverViews: () => [],
      addresses: () => (name) => (name === 'forged' ? "not one of its Node's addresses" : undefined),
      staleAfterMs: 5_000,
      clock,
    });
    expect(source().map((n) => n.name)).toEqual(['a']);
  });

  it('on the leader: the driver decides who is usable, and the newer of its agent answer and the inventory gives the counts', () => {
    const source = nodeSnapshotSource({
      inventories: lister([
        inventory('a', 2, '2030-01-01T00:00:09Z'),
        inventory('b', 0, '2030-01-01T00:00:05Z'),
        inventory('c', 2, '2030-01-01T00:00:09Z'),
      ]),
      // a: a push answer (0 warm) older than its inventory; b: a probe answer newer than its inventory; c: failing.
      driverViews: () => [view('a', 0, NOW - 5_000), view('b', 2, NOW - 1_000), view('c', 2, NOW, false)],
      addresses: vouchAll,
      staleAfterMs: 5_000,
      clock,
    });
    expect(source().map((n) => [n.name, n.warm.get(KEY_ID)])).toEqual([
      ['a', 2],
      ['b', 2],
    ]);
  });
});
