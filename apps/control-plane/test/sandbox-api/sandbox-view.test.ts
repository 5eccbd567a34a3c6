// The Sandbox view: which facts stand for a sandbox, from node publishes and
// claim events, the changes (with resourceVersions) a watch gets, and get.
import { silentLogger } from '@warmpool/runtime';
import { describe, expect, it, vi } from 'vitest';
import { enrichFromIndex } from '../../src/sandbox-api/index-enricher.js';
import { SandboxReader } from '../../src/sandbox-api/reader.js';
import { tableCells, type SandboxFacts } from '../../src/sandbox-api/sandbox-object.js';
import { SandboxView, type SandboxChange } from '../../src/sandbox-api/view.js';

const T0 = Date.parse('2026-12-01T10:00:00Z');
const iso = (ms: number): string => new Date(ms).toISOString();

function facts(name: string, overrides: Partial<SandboxFacts> = {}): SandboxFacts {
  return { namespace: 'team', name, id: `sb_${name}`, node: 'node-a', deadline: iso(T0 + 300_000), ...overrides };
}

function setup(): { view: SandboxView; changes: SandboxChange[]; clock: { now: number } } {
  const clock = { now: T0 };
  const view = new SandboxView({ now: () => clock.now, tag: 7, skewMarginMs: 1_000, historySize: 4 });
  const changes: SandboxChange[] = [];
  view.subscribe((change) => changes.push(change));
  return { view, changes, clock };
}

const summary = (changes: SandboxChange[]): string[] => changes.map((c) => `${c.type} ${c.sandbox.facts.name}`);

describe('SandboxView', () => {
  it('shows a claim from its event at once, and keeps it when its node publishes it', () => {
    const { view, changes, clock } = setup();
    view.applyNode('node-a', { publishedAtMs: T0 - 10_000, partial: false, entries: [] });
    view.applyClaimed(facts('job-1', { pool: 'python', tier: 'warm', ownerAddr: '10.0.0.5:9000' }), T0);
    expect(view.get('team', 'job-1')?.object.status?.nodeName).toBe('node-a');
    clock.now = T0 + 30_000;
    view.applyNode('node-a', {
      publishedAtMs: T0 + 30_000,
      partial: false,
      entries: [facts('job-1', { claimedAt: iso(T0), key: { template: 'img', net: 'none', size: 'small' } })],
    });
    expect(summary(changes)).toEqual(['ADDED job-1', 'MODIFIED job-1']);
    const served = view.get('team', 'job-1');
    expect(served?.facts).toMatchObject({
      tier: 'warm',
      ownerAddr: '10.0.0.5:9000',
      pool: 'python',
      claimedAt: iso(T0),
      key: { template: 'img' },
    });
    expect(view.owningNode('team', 'job-1')).toBe('node-a');
  });

  it("shows a sandbox another cluster serves under that cluster, and never drops it for a local node's publish", () => {
    const { view, clock } = setup();
    // This cluster has a node of the same name as the peer's node that serves the spilled claim.
    view.applyNode('node-a', { publishedAtMs: T0 - 10_000, partial: false, entries: [] });
    view.applyClaimed(facts('spilled', { cluster: 'west', pool: 'python', ownerAddr: '10.1.0.5:9000' }), T0);
    clock.now = T0 + 30_000;
    view.applyNode('node-a', { publishedAtMs: T0 + 30_000, partial: false, entries: [] });
    const served = view.get('team', 'spilled');
    expect(served?.object.status).toMatchObject({ nodeName: 'west/node-a', cluster: 'west' });
    expect(tableCells(served!, clock.now)[1]).toBe('west/node-a');
    expect(tableCells(served!, clock.now).at(-1)).toBe('west');
    view.applyReleased('team', 'spilled', 'sb_spilled', T0 + 31_000);
    expect(view.get('team', 'spilled')).toBeUndefined();
  });

  it('drops a sandbox released on its node once a publish after the claim no longer lists it', () => {
    const { view, changes, clock } = setup();
    view.applyNode('node-a', { publishedAtMs: T0 - 10_000, partial: false, entries: [] });
    view.applyClaimed(facts('job-1'), T0);
    clock.now = T0 + 500;
    // A publish within the skew margin of the claim does not yet prove it gone.
    view.applyNode('node-a', { publishedAtMs: T0 + 500, partial: false, entries: [] });
    expect(view.get('team', 'job-1')).toBeDefined();
    clock.now = T0 + 30_000;
    view.applyNode('node-a', { publishedAtMs: T0 + 30_000, partial: false, entries: [] });
    expect(view.get('team', 'job-1')).toBeUndefined();
    expect(summary(changes)).toEqual(['ADDED job-1', 'DELETED job-1']);
  });

  it('keeps a claim whose node publishes only part of its entries (capped) or none, until its deadline', () => {
    const { view, clock } = setup();
    view.applyNode('node-a', { publishedAtMs: T0 + 60_000, partial: true, entries: [] });
    view.applyClaimed(facts('job-1', { deadline: iso(T0 + 120_000) }), T0);
    expect(view.get('team', 'job-1')).toBeDefined();
    clock.now = T0 + 120_001;
    view.sweep();
    expect(view.get('team', 'job-1')).toBeUndefined();
  });

  it('takes a release event over an older publish that still lists the sandbox', () => {
    const { view, changes } = setup();
    view.applyNode('node-a', { publishedAtMs: T0, partial: false, entries: [facts('job-1')] });
    view.applyReleased('team', 'job-1', 'sb_job-1', T0 + 5_000);
    expect(view.get('team', 'job-1')).toBeUndefined();
    // The same claimRef claimed again (a new sandbox) shows.
    view.applyClaimed(facts('job-1', { id: 'sb_second' }), T0 + 6_000);
    expect(view.get('team', 'job-1')?.facts.id).toBe('sb_second');
    expect(summary(changes)).toEqual(['ADDED job-1', 'DELETED job-1', 'ADDED job-1']);
  });

  it("forgets a node's sandboxes with its inventory, unless claim events still stand for them", () => {
    const { view } = setup();
    view.applyNode('node-a', { publishedAtMs: T0, partial: false, entries: [facts('old')] });
    view.applyClaimed(facts('new'), T0 + 1_000);
    view.applyNode('node-a', undefined);
    expect(view.get('team', 'old')).toBeUndefined();
    expect(view.get('team', 'new')).toBeDefined();
  });

  it('a renewal is a MODIFIED with the new deadline, keeping the claim time', () => {
    const { view, changes } = setup();
    view.applyClaimed(facts('job-1'), T0);
    view.applyClaimed(facts('job-1', { deadline: iso(T0 + 900_000) }), T0 + 60_000);
    expect(summary(changes)).toEqual(['ADDED job-1', 'MODIFIED job-1']);
    expect(view.get('team', 'job-1')?.facts).toMatchObject({ deadline: iso(T0 + 900_000), claimedAt: iso(T0) });
  });

  it('numbers changes consecutively, replays those after a resourceVersion, and answers gone when older than the history or not its own', () => {
    const { view, changes } = setup();
    const start = Number(view.resourceVersion);
    for (const name of ['a', 'b', 'c']) view.applyClaimed(facts(name), T0);
    expect(changes.map((c) => c.resourceVersion)).toEqual([start + 1, start + 2, start + 3]);
    expect(view.resourceVersion).toBe(String(start + 3));
    expect(summary(view.changesSince(start + 1) as SandboxChange[])).toEqual(['ADDED b', 'ADDED c']);
    expect(view.changesSince(start + 3)).toEqual([]);
    expect(view.changesSince(start + 4)).toBe('gone');
    expect(view.changesSince(12345)).toBe('gone');
    for (const name of ['d', 'e', 'f', 'g']) view.applyClaimed(facts(name), T0);
    expect(view.changesSince(start)).toBe('gone');
    expect(summary(view.changesSince(start + 6) as SandboxChange[])).toEqual(['ADDED g']);
  });

  it("lists per namespace, with each object's resourceVersion, pool label and Ready condition", () => {
    const { view } = setup();
    view.applyClaimed(facts('x', { pool: 'python' }), T0);
    view.applyClaimed(facts('y', { namespace: 'other' }), T0);
    expect([...view.items('team')].map((s) => s.facts.name)).toEqual(['x']);
    expect([...view.items()].map((s) => s.facts.name).sort()).toEqual(['x', 'y']);
    const object = view.get('team', 'x')?.object;
    expect(object?.metadata).toMatchObject({ name: 'x', namespace: 'team', labels: { 'warmpool.dev/pool': 'python' } });
    expect(object?.status?.conditions?.[0]).toMatchObject({ type: 'Ready', status: 'True' });
    expect(Number(object?.metadata.resourceVersion)).toBeGreaterThan(0);
  });
});

describe('SandboxReader (get)', () => {
  const grant = {
    id: 'sb_new',
    token: 't',
    deadline: iso(T0 + 300_000),
    ownerAddr: '10.0.0.9:9000',
    node: 'node-b',
    namespace: 'team',
    warmPool: 'python',
    claimRef: 'new',
    tier: 'cold' as const,
    door: 'http' as const,
    owner: '0123456789abcdef0123456789abcdef',
  };
  const row = {
    id: 'sb_new',
    key: { template: 'img', net: 'none', size: 'small' },
    deadline: iso(T0 + 400_000),
    claimed_at: iso(T0),
  };

  it('answers from the view first, without asking the index', async () => {
    const { view } = setup();
    view.applyClaimed(facts('job-1'), T0);
    const reader = new SandboxReader({ view, lookup: () => Promise.reject(new Error('not asked')) });
    expect((await reader.get('team', 'job-1'))?.facts.id).toBe('sb_job-1');
  });

  it('finds a claim the view does not show yet in the index, confirmed by its node', async () => {
    const { view } = setup();
    const asked: string[] = [];
    const reader = new SandboxReader({
      view,
      lookup: async () => grant,
      askNode: async (node, ref) => {
        asked.push(`${node} ${ref}`);
        return [row];
      },
    });
    expect((await reader.get('team', 'new'))?.facts).toMatchObject({
      node: 'node-b',
      tier: 'cold',
      ownerAddr: '10.0.0.9:9000',
      claimedAt: iso(T0),
      deadline: iso(T0 + 400_000),
    });
    expect(asked).toEqual(['node-b team/new']);
  });

  it("answers the index's record when the node does not answer in time, and nothing when the node no longer holds it", async () => {
    const { view } = setup();
    const slow = new SandboxReader({
      view,
      lookup: async () => grant,
      askNode: () => Promise.reject(new Error('timeout')),
    });
    expect((await slow.get('team', 'new'))?.facts.node).toBe('node-b');
    const released = new SandboxReader({ view, lookup: async () => grant, askNode: async () => [] });
    expect(await released.get('team', 'new')).toBeUndefined();
    const unknown = new SandboxReader({ view, lookup: async () => undefined });
    expect(await unknown.get('team', 'nobody')).toBeUndefined();
  });
});

describe('enrichFromIndex', () => {
  it('asks the claim index again after a failed lookup (Redis not connected yet), without waiting for the sandbox to change', async () => {
    const { view } = setup();
    let calls = 0;
    const grant = {
      id: 'sb_job-1',
      token: 't',
      deadline: iso(T0 + 300_000),
      ownerAddr: '10.0.0.5:9000',
      node: 'node-a',
      namespace: 'team',
      warmPool: 'python',
      claimRef: 'job-1',
      tier: 'warm' as const,
      door: 'crd' as const,
      owner: 'uid-job-1',
    };
    const stop = enrichFromIndex({
      view,
      lookup: async () => {
        calls++;
        if (calls === 1) throw new Error("Stream isn't writeable and enableOfflineQueue options is false");
        return grant;
      },
      logger: silentLogger,
      retryMs: 10,
    });
    try {
      view.applyNode('node-a', {
        publishedAtMs: T0,
        partial: false,
        entries: [facts('job-1', { claimedAt: iso(T0 - 1_000), key: { template: 'img', net: 'none', size: 'small' } })],
      });
      await vi.waitFor(() => expect(view.get('team', 'job-1')?.facts.ownerAddr).toBe('10.0.0.5:9000'), {
        timeout: 2_000,
        interval: 5,
      });
      expect(view.get('team', 'job-1')?.facts.tier).toBe('warm');
      expect(calls).toBe(2);
    } finally {
      stop();
    }
  });
});
