// Status writes that land only on the object they were computed from. A status
// computed from a cached object and written by name alone lands on whatever
// object has the name when the write arrives: after a delete and a re-create,
// on a namesake that never had that status. The apiserver refuses (409) a
// write that carries a resourceVersion the stored object is no longer at, and
// on a PUT it checks the body's uid as a precondition too (a merge patch or a
// server-side apply of /status ignores the uid: the status subresource keeps
// nothing of a write's metadata).
import type { KubeObject } from '@warmpool/api';
import type { StatusOf } from './client.js';
import { isConflict, isNotFound } from './errors.js';

/** What came of a write guarded by the version (and uid) of the object it was computed from. */
export type PinnedWrite<T> =
  | { outcome: 'written'; object: T }
  /** The object is gone (404): nothing was written. */
  | { outcome: 'gone' }
  /**
   * The object is no longer the one the write was computed from (409): changed since, or deleted and replaced by a
   * namesake. Nothing was written; what to write is for a fresh read of the object to say.
   */
  | { outcome: 'moved' };

/** Runs a guarded write; 404 and 409 are outcomes, any other failure is thrown. */
export async function pinnedWrite<T>(write: Promise<T>): Promise<PinnedWrite<T>> {
  try {
    return { outcome: 'written', object: await write };
  } catch (err) {
    if (isNotFound(err)) return { outcome: 'gone' };
    if (isConflict(err)) return { outcome: 'moved' };
    throw err;
  }
}

/** `obj`'s resourceVersion; throws without one: a write without it would land on whatever object has the name now. */
export function versionOf(obj: KubeObject): string {
  const resourceVersion = obj.metadata?.resourceVersion;
  if (resourceVersion === undefined || resourceVersion === '')
    throw new Error(
      `${obj.kind ?? 'object'} ${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''} has no resourceVersion`,
    );
  return resourceVersion;
}

/**
 * The body of a PUT on /status that writes `status` (the whole status: what is left out is dropped) onto `obj` as it
 * is at its resourceVersion: of the metadata only what names the object, its uid and that version, which the
 * apiserver both checks (409 unless the stored object has them); the status subresource keeps nothing else of a
 * write, so no spec is sent. Cheaper for the apiserver than a merge patch, which it has to apply to the stored object
 * first.
 */
export function statusReplacementOf<T extends KubeObject>(obj: T, status: StatusOf<T>): T {
  const resourceVersion = versionOf(obj);
  const uid = obj.metadata?.uid;
  return {
    ...(obj.apiVersion === undefined ? {} : { apiVersion: obj.apiVersion }),
    ...(obj.kind === undefined ? {} : { kind: obj.kind }),
    metadata: {
      name: obj.metadata?.name ?? '',
      ...(obj.metadata?.namespace === undefined ? {} : { namespace: obj.metadata.namespace }),
      ...(uid === undefined ? {} : { uid }),
      resourceVersion,
    },
    status,
  } as unknown as T;
}
