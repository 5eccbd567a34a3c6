// client-go's Reflector + shared informer in one small class: list, then
// watch from the list's resourceVersion, keep a cache, tell handlers about
// every change. The watch is resumed from the last seen resourceVersion after
// any break (server timeout, network error, apiserver restart), with backoff
// while the apiserver is unreachable, and the cache is rebuilt by a fresh list
// when that resourceVersion is too old (410 Expired).
import type { KubeConfig } from './kubeconfig/kubeconfig.js';
import type { KubeObject, ResourceType } from '@warmpool/api';
import { Backoff, sleep } from './backoff.js';
import type { BackoffOptions } from './backoff.js';
import { ResourceClient } from './client.js';
import type { ListerWatcher, WatchEvent } from './client.js';
import { isResourceExpired } from './errors.js';
import { keyOf } from './keys.js';
import { Lister } from './lister.js';
import { errorFields, silentKubeLogger } from './logger.js';
import type { KubeLogger } from './logger.js';
import { ObjectStore } from './store.js';

/**
 * Callbacks run synchronously, in event order, on the informer's loop: keep
 * them short (enqueue work, don't do it). The objects are the cached ones: do
 * not mutate them. A throwing handler is logged and does not stop the others.
 */
export interface InformerHandlers<T> {
  /** `initialList` is true for objects found by a list rather than seen by the watch. */
  onAdd?(obj: T, initialList: boolean): void;
  /** Also called with `oldObj === newObj` on every periodic resync. */
  onUpdate?(oldObj: T, newObj: T): void;
  onDelete?(obj: T): void;
}

export interface InformerOptions {
  /** Watch one namespace; all namespaces when omitted. */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Re-deliver every cached object as an update this often (0 or omitted: never). */
  resyncPeriodMs?: number;
  /** Delay between attempts while list or watch fail. */
  backoff?: BackoffOptions;
  /** Each watch asks the server to end it after a random time between this and twice this (client-go: 300 s). */
  watchTimeoutSeconds?: number;
  logger?: KubeLogger;
  /**
   * Applied to every object before it is cached or handed to handlers (client-go's SetTransform):
   * keep only what is read, so a cache of big objects (Nodes) stays small.
   */
  transform?: (obj: KubeObject) => KubeObject;
  /**
   * List in pages of this many objects (client-go's reflector pages by 500), transforming each
   * page before the next: a list of many big objects never sits in memory whole. Default: one list.
   */
  pageSize?: number;
}

export class Informer<T extends KubeObject> {
  readonly lister: Lister<T>;
  readonly #source: ListerWatcher<T>;
  readonly #options: InformerOptions;
  readonly #logger: KubeLogger;
  readonly #store = new ObjectStore<T>();
  readonly #handlers = new Set<InformerHandlers<T>>();
  readonly #stop = new AbortController();
  #synced = false;
  #resourceVersion: string | undefined;
  #run: Promise<void> | undefined;
  #resyncTimer: NodeJS.Timeout | undefined;
  readonly #syncWaiters = new Set<() => void>();

  constructor(source: ListerWatcher<T>, options: InformerOptions = {}) {
    this.#source = source;
    this.#options = options;
    this.#logger = options.logger ?? silentKubeLogger;
    this.lister = new Lister(this.#store);
  }

  get type(): ResourceType {
    return this.#source.type;
  }

  /**
   * Registers handlers and returns a function that removes them. Handlers
   * added after the first list get the cached objects as adds at once.
   */
  addEventHandler(handlers: InformerHandlers<T>): () => void {
    this.#handlers.add(handlers);
    if (this.#synced) {
      for (const obj of this.#store.list()) this.#call('onAdd', () => handlers.onAdd?.(obj, true));
    }
    return () => this.#handlers.delete(handlers);
  }

  /** Starts listing and watching; calling it again does nothing. */
  start(): this {
    if (this.#run || this.#stop.signal.aborted) return this;
    this.#run = this.#loop();
    const period = this.#options.resyncPeriodMs ?? 0;
    if (period > 0) this.#resyncTimer = setInterval(() => this.#resync(), period);
    return this;
  }

  /** True once the first list has been stored; stays true across relists. */
  hasSynced(): boolean {
    return this.#synced;
  }

  /** Resolves when the first list is in the cache; rejects if `signal` aborts or the informer closes first. */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.#synced) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const stopSignals = [this.#stop.signal, ...(signal ? [signal] : [])];
      const onStop = (): void => {
        cleanup();
        reject(new Error(`${this.type.kind} informer: stopped waiting before the first list`));
      };
      const onSynced = (): void => {
        cleanup();
        resolve();
      };
      const cleanup = (): void => {
        this.#syncWaiters.delete(onSynced);
        for (const s of stopSignals) s.removeEventListener('abort', onStop);
      };
      if (stopSignals.some((s) => s.aborted)) return onStop();
      this.#syncWaiters.add(onSynced);
      for (const s of stopSignals) s.addEventListener('abort', onStop, { once: true });
    });
  }

  /** The resourceVersion the cache is known to be current at (from the last list, event or bookmark). */
  get resourceVersion(): string | undefined {
    return this.#resourceVersion;
  }

  /** Stops the watch and the resync timer; the cache stays readable. */
  async close(): Promise<void> {
    this.#stop.abort();
    if (this.#resyncTimer) clearInterval(this.#resyncTimer);
    this.#resyncTimer = undefined;
    await this.#run;
  }

  async #loop(): Promise<void> {
    const signal = this.#stop.signal;
    const backoff = new Backoff(this.#options.backoff);
    const selectors = {
      namespace: this.#options.namespace,
      labelSelector: this.#options.labelSelector,
      fieldSelector: this.#options.fieldSelector,
    };
    const watchTimeout = this.#options.watchTimeoutSeconds ?? 300;
    let expiredInARow = 0;
    while (!signal.aborted) {
      try {
        if (this.#resourceVersion === undefined) {
          const list = await this.#listAll(selectors, signal);
          if (signal.aborted) break;
          this.#replace(list.items);
          this.#resourceVersion = list.resourceVersion;
          this.#markSynced();
          backoff.reset();
        }
        const started = performance.now();
        let events = 0;
        const stream = this.#source.watch({
          ...selectors,
          resourceVersion: this.#resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds: Math.round(watchTimeout * (1 + Math.random())),
          signal,
        });
        for await (const event of stream) {
          if (signal.aborted) break;
          this.#apply(event);
          if (events++ === 0) {
            backoff.reset();
            expiredInARow = 0;
          }
        }
        // The server ended the watch (its timeout, or shutting down): resume at
        // once, unless it keeps ending streams the moment they open.
        if (events === 0 && performance.now() - started < 1000) await sleep(backoff.next(), signal);
      } catch (err) {
        if (signal.aborted) break;
        if (isResourceExpired(err)) {
          this.#logger.info('watch resourceVersion expired; relisting', {
            kind: this.type.kind,
            resourceVersion: this.#resourceVersion,
          });
          this.#resourceVersion = undefined;
          if (expiredInARow++ > 0) await sleep(backoff.next(), signal);
          continue;
        }
        const delay = backoff.next();
        this.#logger.warn('list/watch failed; retrying', {
          kind: this.type.kind,
          retryInMs: Math.round(delay),
          ...errorFields(err),
        });
        await sleep(delay, signal);
      }
    }
  }

  /** Every page of a list, transformed as it arrives; an expired continue token throws 410 like an expired watch. */
  async #listAll(
    selectors: { namespace: string | undefined; labelSelector: string | undefined; fieldSelector: string | undefined },
    signal: AbortSignal,
  ): Promise<{ items: T[]; resourceVersion: string }> {
    const items: T[] = [];
    const limit = this.#options.pageSize;
    let continueToken: string | undefined;
    for (;;) {
      const page = await this.#source.list({
        ...selectors,
        signal,
        ...(limit !== undefined ? { limit } : {}),
        ...(continueToken !== undefined ? { continue: continueToken } : {}),
      });
      for (const item of page.items) items.push(this.#transform(item));
      if (page.continue === undefined || page.continue === '' || signal.aborted)
        return { items, resourceVersion: page.resourceVersion };
      continueToken = page.continue;
    }
  }

  #transform(obj: T): T {
    const transform = this.#options.transform;
    return transform === undefined ? obj : (transform(obj) as T);
  }

  #apply(event: WatchEvent<T>): void {
    const resourceVersion = event.object.metadata?.resourceVersion;
    switch (event.type) {
      case 'BOOKMARK':
        break;
      case 'ADDED':
      case 'MODIFIED': {
        const obj = this.#transform(event.object);
        const old = this.#store.upsert(obj);
        if (old) this.#emit('onUpdate', (h) => h.onUpdate?.(old, obj));
        else this.#emit('onAdd', (h) => h.onAdd?.(obj, false));
        break;
      }
      case 'DELETED': {
        // The event carries the object's final state, fresher than the cached copy.
        const obj = this.#transform(event.object);
        this.#store.remove(keyOf(obj));
        this.#emit('onDelete', (h) => h.onDelete?.(obj));
        break;
      }
    }
    if (resourceVersion) this.#resourceVersion = resourceVersion;
  }

  // A fresh list (already transformed) replaces the cache; handlers see only
  // the differences, as if they had watched the changes they missed.
  #replace(items: T[]): void {
    const initial = !this.#synced;
    const seen = new Set<string>();
    for (const obj of items) {
      seen.add(keyOf(obj));
      const old = this.#store.upsert(obj);
      if (!old) this.#emit('onAdd', (h) => h.onAdd?.(obj, initial));
      else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion)
        this.#emit('onUpdate', (h) => h.onUpdate?.(old, obj));
    }
    for (const key of this.#store.keys()) {
      if (seen.has(key)) continue;
      const gone = this.#store.remove(key);
      if (gone) this.#emit('onDelete', (h) => h.onDelete?.(gone));
    }
  }

  #resync(): void {
    if (!this.#synced || this.#stop.signal.aborted) return;
    for (const obj of this.#store.list()) this.#emit('onUpdate', (h) => h.onUpdate?.(obj, obj));
  }

  #markSynced(): void {
    if (this.#synced) return;
    this.#synced = true;
    for (const waiter of [...this.#syncWaiters]) waiter();
  }

  #emit(what: keyof InformerHandlers<T>, call: (handlers: InformerHandlers<T>) => void): void {
    for (const handlers of [...this.#handlers]) this.#call(what, () => call(handlers));
  }

  #call(what: string, call: () => void): void {
    try {
      call();
    } catch (err) {
      this.#logger.error('informer handler threw', { kind: this.type.kind, handler: what, ...errorFields(err) });
    }
  }
}

/** An informer over the apiserver for `type`; call `start()` after adding handlers. */
export function createInformer<T extends KubeObject>(
  kubeConfig: KubeConfig,
  type: ResourceType,
  options: InformerOptions = {},
): Informer<T> {
  return new Informer<T>(new ResourceClient<T>(kubeConfig, type), options);
}
