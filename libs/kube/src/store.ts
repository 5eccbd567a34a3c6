// The informer's cache: objects by `namespace/name`, with a per-namespace
// index so a namespaced list does not scan every object.
import type { KubeObject } from '@warmpool/api';
import { keyOf } from './keys.js';

/** Read-only access to a cache; what a Lister needs. */
export interface ReadableStore<T> {
  get(key: string): T | undefined;
  list(): T[];
  listNamespace(namespace: string): T[];
  readonly size: number;
}

export class ObjectStore<T extends KubeObject> implements ReadableStore<T> {
  readonly #byKey = new Map<string, T>();
  readonly #byNamespace = new Map<string, Map<string, T>>();

  get size(): number {
    return this.#byKey.size;
  }

  get(key: string): T | undefined {
    return this.#byKey.get(key);
  }

  list(): T[] {
    return [...this.#byKey.values()];
  }

  listNamespace(namespace: string): T[] {
    return [...(this.#byNamespace.get(namespace)?.values() ?? [])];
  }

  keys(): string[] {
    return [...this.#byKey.keys()];
  }

  /** Stores `obj`, returning what it replaced. */
  upsert(obj: T): T | undefined {
    const key = keyOf(obj);
    const old = this.#byKey.get(key);
    this.#byKey.set(key, obj);
    const namespace = obj.metadata?.namespace ?? '';
    let bucket = this.#byNamespace.get(namespace);
    if (!bucket) this.#byNamespace.set(namespace, (bucket = new Map()));
    bucket.set(key, obj);
    return old;
  }

  /** Removes the object under `key`, returning it. */
  remove(key: string): T | undefined {
    const old = this.#byKey.get(key);
    if (!old) return undefined;
    this.#byKey.delete(key);
    const namespace = old.metadata?.namespace ?? '';
    const bucket = this.#byNamespace.get(namespace);
    bucket?.delete(key);
    if (bucket?.size === 0) this.#byNamespace.delete(namespace);
    return old;
  }
}
