// A read-only view over an informer's cache, like client-go's listers: reads
// never reach the apiserver. Returned objects are the cached ones, shared with
// every other reader: treat them as immutable (copy before changing).
import type { KubeObject } from '@warmpool/api';
import { objectKey } from './keys.js';
import type { ReadableStore } from './store.js';

export class Lister<T extends KubeObject> {
  readonly #store: ReadableStore<T>;

  constructor(store: ReadableStore<T>) {
    this.#store = store;
  }

  /** Every cached object, or those of one namespace. */
  list(namespace?: string): T[] {
    return namespace === undefined ? this.#store.list() : this.#store.listNamespace(namespace);
  }

  /** `get(namespace, name)` for namespaced objects, `get(name)` for cluster-scoped ones. */
  get(name: string): T | undefined;
  get(namespace: string, name: string): T | undefined;
  get(first: string, second?: string): T | undefined {
    return second === undefined
      ? this.#store.get(objectKey(undefined, first))
      : this.#store.get(objectKey(first, second));
  }

  get size(): number {
    return this.#store.size;
  }
}
