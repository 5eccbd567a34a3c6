// Every cache this replica keeps, in every replica (a new leader starts on
// warm caches): started first, closed last, and the replica is not ready
// until each has synced.
import type { KubeObject } from '@warmpool/api';
import type { Informer } from '@warmpool/kube';
import type { Runnable } from './runnable.js';

export function cachesRunnable(caches: ReadonlyArray<Informer<KubeObject>>): Runnable {
  return {
    name: 'caches',
    needsLeader: false,
    start: () => {
      for (const cache of caches) cache.start();
    },
    notReady: () =>
      caches.filter((cache) => !cache.hasSynced()).map((cache) => `${cache.type.kind} cache not synced yet`),
    close: async () => {
      await Promise.all(caches.map((cache) => cache.close()));
    },
  };
}
