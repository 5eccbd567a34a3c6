// A runnable is one subsystem as the manager sees it. Invariants:
//  - start(signal) is called once per lifetime (needsLeader false: at the
//    manager's start, in every replica) or once per leadership term
//    (needsLeader true: when the term begins). `signal` aborts when that
//    lifetime or term ends; the runnable stops its work then, at once.
//  - start() resolves once the runnable is up (not when its work is done);
//    a leader runnable that needs synced caches waits for them itself.
//  - close() is called once, after the last term ended: the leader
//    runnables' together, then the others' in reverse list order (so a
//    leader runnable's close may not wait for another's). It releases
//    everything the runnable opened and may not assume start() ever ran. A
//    throwing close() never skips another.
import type { Informer } from '@warmpool/kube';
import type { KubeObject } from '@warmpool/api';

export interface Runnable {
  /** For logs: which subsystem started, failed or did not close. */
  readonly name: string;
  /** true: runs only while this replica leads, one start() per term. */
  readonly needsLeader: boolean;
  start(signal: AbortSignal): Promise<void> | void;
  /** Why this runnable keeps the replica from being ready (empty or absent: it does not). */
  notReady?(): string[];
  /** Why the replica should be restarted (empty or absent: live). */
  notLive?(): string[];
  close(): Promise<void>;
}

/** Resolves true once every cache has synced, false when `signal` ended first. */
export async function cachesSynced(
  caches: ReadonlyArray<Pick<Informer<KubeObject>, 'waitForSync'>>,
  signal?: AbortSignal,
): Promise<boolean> {
  try {
    await Promise.all(caches.map((cache) => cache.waitForSync(signal)));
    return signal?.aborted !== true;
  } catch {
    return false;
  }
}
