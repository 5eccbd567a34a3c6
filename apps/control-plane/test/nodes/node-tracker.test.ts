import { describe, expect, it } from 'vitest';
import type { NodeInventory } from '@warmpool/api';
import { infoOf, inventoryObject, ManualClock } from '@warmpool/harness';
import type { AddressCheck } from '../../src/nodes/addresses.js';
import { NodeTracker } from '../../src/nodes/tracker.js';

/** Every address is its node's here; node-addresses.test.ts specifies the check itself. */
const vouchedFor: AddressCheck = () => undefined;

function sync(
  nodes: NodeTracker,
  inventories: NodeInventory[],
  check: AddressCheck = vouchedFor,
): ReturnType<NodeTracker['sync']> {
  return nodes.sync(inventories, check);
}

function tracker(clock: ManualClock): NodeTracker {
  return new NodeTracker({ clock, staleAfterMs: 90_000, failureThreshold: 3, agentObservationTtlMs: 10_000 });
}

describe('NodeTracker', () => {
  it('judges a fresh inventory eligible, with room = capacity − claimed', () => {
    const clock = new ManualClock();
    const nodes = tracker(clock);
    sync(nodes, [inventoryObject('a', { publishedAt: clock.iso(), capacity: 10, claimed: 4 })]);
    expect(nodes.view('a')).toMatchObject({ eligible: true, exclusion: undefined, room: 6 });
  });

  it('takes a node out once its inventory has not changed for --stale-after, judged on the local clock', () => {
    const clock = new ManualClock();
    const nodes = tracker(clock);
    sync(nodes, [inventoryObject('a', { publishedAt: clock.iso() })]);
    clock.advance(89_000);
    expect(nodes.view('a')?.eligible).toBe(true);
    clock.advance(2_000);
    expect(nodes.view('a')?.exclusion).toBe('stale');
    // The agent's clock may be far off: a new publishedAt counts as fresh from the moment it is seen.
    sync(nodes, [inventoryObject('a', { publishedAt: '1999-01-01T00:00:00Z' })]);
    expect(nodes.view('a')?.eligible).toBe(true);
  });

  it('judges a first sighting by its age, since nothing else tells how old it is', () => {
    const clock = new ManualClock();
    const nodes = tracker(clock);
    sync(nodes, [inventoryObject('old', { publishedAt: clock.iso(-120_000) }), inventoryObject('never', {})]);
    expect(nodes.view('old')?.exclusion).toBe('stale');
    expect(nodes.view('never')?.exclusion).toBe('stale');
  });

  it('takes a node out after consecutive failed calls and puts it back on the first answer', () => {
    const clock = new ManualClock();
    const nodes = tracker(clock);
    sync(nodes, [inventoryObject('a', { publishedAt: clock.iso() })]);
    expect(nodes.recordFailure('a', new Error('refused'))).toBe(false);
    expect(nodes.recordFailure('a', new Error('refused'))).toBe(false);
    expect(nodes.recordFailure('a', new Error('refused'))).toBe(true);
    expect(nodes.view('a')).toMatchObject({ exclusion: 'failing', failures: 3, lastError: 'refused' });
    nodes.recordAnswer('a', infoOf({}));
    expect(nodes.view('a')?.eligible).toBe(true);
  });

  it('forgets failures when the agent moves to a new address', () => {
    const clock = new ManualClock();
    const nodes = tracker(clock);
    sync(nodes, [inventoryObject('a', { publishedAt: clock.iso(), address: '10.0.0.1:7071' })]);
    for (let i = 0; i < 3; i++) nodes.recordFailure('a', new Error('refused'));
    sync(nodes, [inventoryObject('a', { publishedAt: clock.iso(), address: '10.0.0.2:7071' })]);
    expect(nodes.view('a')?.eligible).toBe(true);
  });

  it('keeps draining nodes and nodes without a usable address out of placement', () => {
    const clock = new ManualClock();
    const nodes = tracker(clock);
    sync(nodes, [
      inventoryObject('draining', { publishedAt: clock.iso(), draining: true }),
      inventoryObject('wildcard', { publishedAt: clock.iso(), address: '0.0.0.0:7071' }),
      inventoryObject('garbage', { publishedAt: clock.iso(), address: 'not an address' }),
    ]);
    expect(nodes.views().map((v) => [v.name, v.exclusion])).toEqual([
      ['draining', 'draining'],
      ['garbage', 'no-address'],
      ['wildcard', 'no-address'],
    ]);
  });

  it('keeps a node whose address its Node does not vouch for out of placement, saying why, and takes it back once it does', () => {
    const clock = new ManualClock();
    const nodes = tracker(clock);
    const forged = inventoryObject('a', { publishedAt: clock.iso(), address: '127.0.9.9:7071' });
    sync(nodes, [forged], (name, address) =>
      address.startsWith('127.0.9.9:') ? `127.0.9.9 is not one of Node ${name}'s addresses` : undefined,
    );
    expect(nodes.view('a')).toMatchObject({
      eligible: false,
      exclusion: 'unverified-address',
      addressProblem: "127.0.9.9 is not one of Node a's addresses",
    });
    sync(nodes, [forged]);
    expect(nodes.view('a')).toMatchObject({ eligible: true, addressProblem: undefined });
  });

  it("prefers the agent's own recent answer over the inventory, and falls back when it ages", () => {
    const clock = new ManualClock();
    const nodes = tracker(clock);
    sync(nodes, [inventoryObject('a', { publishedAt: clock.iso() })]);
    nodes.recordAnswer('a', infoOf({ 'img|none|small': 2 }, { 'img|none|small': 2 }));
    expect(nodes.view('a')?.observation?.source).toBe('agent');
    clock.advance(11_000);
    sync(nodes, [inventoryObject('a', { publishedAt: clock.iso() })]);
    expect(nodes.view('a')?.observation?.source).toBe('inventory');
  });

  it('reports the nodes whose inventory went', () => {
    const clock = new ManualClock();
    const nodes = tracker(clock);
    sync(nodes, [
      inventoryObject('a', { publishedAt: clock.iso() }),
      inventoryObject('b', { publishedAt: clock.iso() }),
    ]);
    expect(sync(nodes, [inventoryObject('a', { publishedAt: clock.iso() })])).toEqual([
      { name: 'b', address: 'b.test:7071' },
    ]);
  });

  it('reads a node through its inventory only while its agent has not answered within the observation TTL', () => {
    const clock = new ManualClock();
    const nodes = tracker(clock);
    sync(nodes, [inventoryObject('a', { publishedAt: clock.iso() })]);
    expect(nodes.readsInventory('a')).toBe(true);
    nodes.recordAnswer('a', infoOf({ 'img|none|small': 2 }));
    expect(nodes.readsInventory('a')).toBe(false);
    clock.advance(11_000);
    expect(nodes.readsInventory('a')).toBe(true);
  });
});
