// The specs' test world keeps its promises: close() runs every cleanup step
// even when one throws (the spec's own first, last deferred first), closes
// the control planes it started once however often they are closed, and
// leaves no log directory, apiserver or data directory behind; a world that
// fails to start closes what did start.
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { testWorld } from './world.js';

/**
 * Log directories of worlds named `name` that were not there `before` (one a killed earlier run left does not count).
 */
const newLeftovers = (name: string, before: readonly string[]): string[] =>
  readdirSync(tmpdir()).filter((d) => d.startsWith(`warmpool-${name}-`) && !before.includes(d));
const logDirs = (name: string): string[] => newLeftovers(name, []);

describe('the test world', () => {
  it('runs every step of close() though one throws, rethrows that failure, and leaves nothing behind', async () => {
    const before = logDirs('cp-world');
    const world = await testWorld({ name: 'cp-world', token: 'world-token' });
    const ran: string[] = [];
    world.defer(() => ran.push('deferred first'));
    world.defer(() => {
      throw new Error('a cleanup step failed');
    });
    const cp = await world.leader(await world.namespace('world'));
    world.defer(() => ran.push('deferred last'));
    // Closed early by a spec and again by close(): one close.
    expect(cp.close()).toBe(cp.close());

    await expect(world.close()).rejects.toThrow('a cleanup step failed');
    expect(ran).toEqual(['deferred last', 'deferred first']);
    expect(cp.isLeader()).toBe(false);
    await expect(world.cluster.startApiserver()).rejects.toThrow(/is stopped/);
    expect(existsSync(world.dir)).toBe(false);
    expect(newLeftovers('cp-world', before)).toEqual([]);
  });

  it('says which part a spec did not ask for', async () => {
    const world = await testWorld({ name: 'cp-world-bare', token: 'world-token' });
    try {
      expect(() => world.redis).toThrow('this world has no Redis');
      expect(() => world.fleet).toThrow('this world has no fleet');
    } finally {
      await world.close();
    }
  });

  it('closes what did start when a part fails to start', async () => {
    const before = logDirs('cp-world-broken');
    await expect(
      testWorld({
        name: 'cp-world-broken',
        token: 'world-token',
        redis: true,
        fleet: { count: 1, sandboxdArgs: ['--no-such-flag'] },
      }),
    ).rejects.toThrow(/fake-sandboxd of node-0 exited/);
    expect(newLeftovers('cp-world-broken', before)).toEqual([]);
  });
});
