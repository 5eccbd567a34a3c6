// The warm-pool driver as the manager runs it: leader-only, each term begins
// once the caches the driver reads have synced. It is not ready while a term
// has no generation left to push, and not live while, leading, its loop is
// wedged (no reconcile finished for stallTimeoutMs).
import { closeInOrder, type Clock, type Logger } from '@warmpool/runtime';
import type { PoolSetter } from '../../agents/pool-setter.js';
import { cachesSynced, type Runnable } from '../../manager/runnable.js';
import type { WarmPoolDriver } from './driver.js';
import type { EventRecorder } from './events.js';

export interface WarmPoolRunnableOptions {
  /** With its agent client and Event recorder, closed with it: only the driver pushes and records pool Events. */
  driver: WarmPoolDriver & { setter: PoolSetter; events: EventRecorder };
  clock: Clock;
  stallTimeoutMs: number;
  logger: Logger;
}

export function warmPoolRunnable(options: WarmPoolRunnableOptions): Runnable {
  const { driver, clock, stallTimeoutMs } = options;
  const { reconciler } = driver;
  const caches = [driver.pools, driver.templates, driver.inventories, ...driver.driverOnly];
  return {
    name: 'warm-pool driver',
    needsLeader: true,
    async start(signal) {
      if (await cachesSynced(caches, signal)) reconciler.lead(signal);
    },
    notReady: () => reconciler.notReadyReasons(),
    notLive: () => {
      const stalled = reconciler.stalledMs(clock.now());
      if (stalled === undefined || stalled <= stallTimeoutMs) return [];
      return [
        `leading, but no reconcile finished for ${Math.round(stalled / 1000)} s (--stall-timeout ${Math.round(stallTimeoutMs / 1000)} s): the loop is wedged`,
      ];
    },
    close: () =>
      closeInOrder(
        'the warm-pool driver',
        [
          ['reconciler', () => reconciler.close()],
          ['pool setter', () => driver.setter.close()],
          ['events', () => driver.events.close()],
        ],
        options.logger,
      ),
  };
}
