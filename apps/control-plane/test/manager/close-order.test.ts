// The manager's close: the term ends first; the leader runnables close
// together (none waits for another, so a stopped apiserver costs the longest of
// their closes, not their sum); then the every-replica runnables close in
// reverse list order; a close that throws skips nothing. Standalone (no
// election), so the order is the manager's alone.
import { KubeConfig } from '@kubernetes/client-node';
import { eventually } from '@warmpool/harness';
import { silentLogger } from '@warmpool/runtime';
import { describe, expect, it } from 'vitest';
import { Manager } from '../../src/manager/manager.js';
import type { Runnable } from '../../src/manager/runnable.js';

/** A standalone manager: it leads at start, so its leader runnables start at once. */
function standaloneManager(): Manager {
  return new Manager({
    election: {
      kubeConfig: new KubeConfig(),
      namespace: 'default',
      leaseName: 'unused',
      identity: 'only',
      elect: false,
      token: () => 'a-fleet-token',
    },
    logger: silentLogger,
  });
}

/** A runnable whose close is written to `log` as it starts and ends, and runs `closing` in between. */
function runnable(
  name: string,
  needsLeader: boolean,
  log: string[],
  closing: () => Promise<void> | void = () => undefined,
): Runnable {
  return {
    name,
    needsLeader,
    start: () => undefined,
    close: async () => {
      log.push(`${name} closing`);
      await closing();
      log.push(`${name} closed`);
    },
  };
}

/** Resolves once `log` holds `entry`; fails after a few seconds (a close that waits for another never gets there). */
async function logged(log: readonly string[], entry: string): Promise<void> {
  await eventually(() => log.includes(entry), { timeoutMs: 3_000, what: `"${entry}" logged` });
}

describe('Manager.close', () => {
  it('closes the leader runnables together, then the others in reverse list order', async () => {
    const log: string[] = [];
    const manager = standaloneManager();
    // Each leader's close ends only once the other's has begun: closed one after another, neither would end.
    manager.add(
      runnable('servers', false, log),
      runnable('pipeline', false, log),
      runnable('driver', true, log, () => logged(log, 'reporter closing')),
      runnable('reporter', true, log, () => logged(log, 'driver closing')),
    );
    await manager.start();
    expect(manager.leading).toBe(true);

    await manager.close();

    expect(manager.leading).toBe(false);
    expect(log).toEqual(expect.arrayContaining(['driver closed', 'reporter closed']));
    const leadersDone = Math.max(log.indexOf('driver closed'), log.indexOf('reporter closed'));
    expect(log.slice(leadersDone + 1)).toEqual([
      'pipeline closing',
      'pipeline closed',
      'servers closing',
      'servers closed',
    ]);
  });

  it('closes every other runnable when a leader runnable fails to close', async () => {
    const log: string[] = [];
    const manager = standaloneManager();
    manager.add(
      runnable('servers', false, log),
      runnable('driver', true, log, () => Promise.reject(new Error('the Event recorder could not flush'))),
      runnable('reporter', true, log, () => {
        throw new Error('the reporter could not stop');
      }),
    );
    await manager.start();

    await manager.close();

    expect(log).toContain('servers closed');
    expect(log).toEqual(expect.arrayContaining(['driver closing', 'reporter closing']));
  });
});
