// A typed client for one ResourceType: CRUD, merge patch, server-side apply
// (also on /status) and the scale subresource, all over one KubeTransport.
import type { KubeConfig } from './kubeconfig/kubeconfig.js';
import { apiVersionOf } from '@warmpool/api';
import type { KubeObject, ObjectMeta, ResourceType } from '@warmpool/api';
import { KubeApiError } from './errors.js';
import type { KubeStatus } from './errors.js';
import { transportFor } from './transport.js';
import type { KubeTransport, QueryValue } from './transport.js';

/** Names one object; `namespace` is required for namespaced types and ignored otherwise. */
export interface ObjectRef {
  namespace?: string;
  name: string;
}

export interface ListOptions {
  /** Omit for all namespaces (namespaced types) or for cluster-scoped types. */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Omit for a consistent (most recent) read; `'0'` allows any cached version. */
  resourceVersion?: string;
  resourceVersionMatch?: 'Exact' | 'NotOlderThan';
  limit?: number;
  continue?: string;
  signal?: AbortSignal;
}

export interface ObjectList<T> {
  items: T[];
  /** The collection's resourceVersion: watch from here to see every later change. */
  resourceVersion: string;
  /** Set when `limit` cut the list short: pass it back as `continue` for the next page. */
  continue?: string;
}

export interface WatchOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Events after this version are sent; omit to start from "now" (no history). */
  resourceVersion?: string;
  /** Default true: the server sends BOOKMARK events that keep the resourceVersion fresh. */
  allowWatchBookmarks?: boolean;
  /** The server ends the stream after this long (it picks its own default if omitted). */
  timeoutSeconds?: number;
  signal?: AbortSignal;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';

export interface WatchEvent<T> {
  type: WatchEventType;
  /** For BOOKMARK only `metadata.resourceVersion` is meaningful. */
  object: T;
}

export interface WriteOptions {
  fieldManager?: string;
  dryRun?: boolean;
  signal?: AbortSignal;
}

export interface ApplyOptions {
  /** Who owns the applied fields; required by server-side apply. */
  fieldManager: string;
  /** Take ownership of fields other managers own (default true, as controllers usually want). */
  force?: boolean;
  dryRun?: boolean;
  signal?: AbortSignal;
}

export interface DeleteOptions {
  propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  gracePeriodSeconds?: number;
  /** Delete only if the object still has this uid / resourceVersion (409 otherwise). */
  preconditions?: { uid?: string; resourceVersion?: string };
  dryRun?: boolean;
  signal?: AbortSignal;
}

/** autoscaling/v1 Scale: what the /scale subresource reads and writes. */
export interface Scale {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: { replicas?: number };
  status?: { replicas: number; selector?: string };
}

/** An object for server-side apply: only the fields this manager owns, plus identity. */
export type ApplyConfiguration<T extends KubeObject> = Omit<Partial<T>, 'metadata'> & {
  metadata: ObjectMeta & { name: string };
};

/** The status type of T, if it has one. */
export type StatusOf<T> = T extends { status?: infer S } ? NonNullable<S> : never;

/** Anything both lists and watches: what an Informer needs. */
export interface ListerWatcher<T> {
  readonly type: ResourceType;
  list(options?: ListOptions): Promise<ObjectList<T>>;
  watch(options?: WatchOptions): AsyncIterable<WatchEvent<T>>;
}

const MERGE_PATCH = 'application/merge-patch+json';
const APPLY_PATCH = 'application/apply-patch+yaml';

export class ResourceClient<T extends KubeObject> implements ListerWatcher<T> {
  readonly type: ResourceType;
  readonly #transport: KubeTransport;

  constructor(kubeConfig: KubeConfig, type: ResourceType) {
    this.type = type;
    this.#transport = transportFor(kubeConfig);
  }

  async get(ref: ObjectRef, options: { signal?: AbortSignal } = {}): Promise<T> {
    const obj = await this.#transport.request<T>({
      method: 'GET',
      path: this.#objectPath(ref),
      signal: options.signal,
    });
    return this.#typed(obj);
  }

  async list(options: ListOptions = {}): Promise<ObjectList<T>> {
    const answer = await this.#transport.request<{
      metadata?: { resourceVersion?: string; continue?: string };
      items?: T[];
    }>({
      method: 'GET',
      path: this.#collectionPath(options.namespace),
      query: {
        labelSelector: options.labelSelector,
        fieldSelector: options.fieldSelector,
        resourceVersion: options.resourceVersion,
        resourceVersionMatch: options.resourceVersionMatch,
        limit: options.limit,
        continue: options.continue,
      },
      signal: options.signal,
    });
    const list: ObjectList<T> = {
      items: (answer.items ?? []).map((item) => this.#typed(item)),
      resourceVersion: answer.metadata?.resourceVersion ?? '',
    };
    if (answer.metadata?.continue) list.continue = answer.metadata.continue;
    return list;
  }

  /**
   * Streams changes. An ERROR event (such as 410 Expired for a resourceVersion
   * the server no longer has) is thrown as a KubeApiError; the stream simply
   * ends when the server closes it, and the caller decides whether to resume.
   */
  async *watch(options: WatchOptions = {}): AsyncGenerator<WatchEvent<T>, void, undefined> {
    const lines = this.#transport.streamLines({
      method: 'GET',
      path: this.#collectionPath(options.namespace),
      query: {
        watch: 1,
        resourceVersion: options.resourceVersion,
        allowWatchBookmarks: options.allowWatchBookmarks ?? true,
        timeoutSeconds: options.timeoutSeconds,
        labelSelector: options.labelSelector,
        fieldSelector: options.fieldSelector,
      },
      signal: options.signal,
      // The server ends every watch by its timeout (at most an hour when we set
      // none); silence well past that means the connection is dead.
      idleTimeoutMs: ((options.timeoutSeconds ?? 3600) + 60) * 1000,
    });
    for await (const line of lines) {
      const event = line as { type?: string; object?: unknown };
      if (event.type === 'ERROR') throw KubeApiError.fromStatus((event.object ?? {}) as KubeStatus, 500);
      if (event.type === 'ADDED' || event.type === 'MODIFIED' || event.type === 'DELETED') {
        yield { type: event.type, object: this.#typed(event.object as T) };
      } else if (event.type === 'BOOKMARK') {
        yield { type: 'BOOKMARK', object: event.object as T };
      }
    }
  }

  async create(obj: T, options: WriteOptions = {}): Promise<T> {
    const body = this.#typed(structuredClone(obj));
    const created = await this.#transport.request<T>({
      method: 'POST',
      path: this.#collectionPath(body.metadata?.namespace, true),
      query: writeQuery(options),
      body,
      signal: options.signal,
    });
    return this.#typed(created);
  }

  /** PUT: fails with 409 Conflict when `obj.metadata.resourceVersion` is stale (omit it to overwrite blindly). */
  async replace(obj: T, options: WriteOptions = {}): Promise<T> {
    return this.#put(obj, '', options);
  }

  /**
   * PUT on /status: like replace, but only status changes are kept. The body's resourceVersion and uid are both
   * preconditions (409 unless the stored object has them): statusReplacementOf builds such a body.
   */
  async replaceStatus(obj: T, options: WriteOptions = {}): Promise<T> {
    return this.#put(obj, '/status', options);
  }

  async delete(ref: ObjectRef, options: DeleteOptions = {}): Promise<void> {
    const body: Record<string, unknown> = { apiVersion: 'v1', kind: 'DeleteOptions' };
    if (options.propagationPolicy) body['propagationPolicy'] = options.propagationPolicy;
    if (options.gracePeriodSeconds !== undefined) body['gracePeriodSeconds'] = options.gracePeriodSeconds;
    if (options.preconditions) body['preconditions'] = options.preconditions;
    await this.#transport.request<unknown>({
      method: 'DELETE',
      path: this.#objectPath(ref),
      query: { dryRun: options.dryRun ? 'All' : undefined },
      body,
      signal: options.signal,
    });
  }

  /** JSON merge patch (RFC 7386) on the object; `null` removes a field. */
  async patch(ref: ObjectRef, patch: Record<string, unknown>, options: WriteOptions = {}): Promise<T> {
    return this.#patch(ref, '', patch, MERGE_PATCH, writeQuery(options), options.signal);
  }

  /**
   * JSON merge patch of `status` on the status subresource. With `resourceVersion` the write is refused (409) unless
   * the object is still at that version: the status subresource ignores every other metadata field of a patch, a uid
   * included, so without it the status lands on whatever object has the name (a namesake created after a delete).
   */
  async patchStatus(
    ref: ObjectRef,
    status: Partial<StatusOf<T>>,
    options: WriteOptions & { resourceVersion?: string } = {},
  ): Promise<T> {
    const body =
      options.resourceVersion === undefined
        ? { status }
        : { metadata: { resourceVersion: options.resourceVersion }, status };
    return this.#patch(ref, '/status', body, MERGE_PATCH, writeQuery(options), options.signal);
  }

  /** Server-side apply: the server merges `obj` in as `fieldManager`'s intent. Creates the object if missing. */
  async apply(obj: ApplyConfiguration<T>, options: ApplyOptions): Promise<T> {
    return this.#patch(
      this.#refOf(obj),
      '',
      this.#typed(structuredClone(obj)),
      APPLY_PATCH,
      applyQuery(options),
      options.signal,
    );
  }

  /**
   * Server-side apply to /status: only `status` (plus identity) of `obj` is taken. A `metadata.uid` in `obj` is
   * ignored (it does not keep the write off a namesake); a `metadata.resourceVersion` is a precondition (409).
   */
  async applyStatus(obj: ApplyConfiguration<T>, options: ApplyOptions): Promise<T> {
    return this.#patch(
      this.#refOf(obj),
      '/status',
      this.#typed(structuredClone(obj)),
      APPLY_PATCH,
      applyQuery(options),
      options.signal,
    );
  }

  async getScale(ref: ObjectRef, options: { signal?: AbortSignal } = {}): Promise<Scale> {
    return this.#transport.request<Scale>({
      method: 'GET',
      path: this.#objectPath(ref) + '/scale',
      signal: options.signal,
    });
  }

  /** Sets spec.replicas through /scale, the way HPA and `kubectl scale` do. */
  async patchScale(ref: ObjectRef, replicas: number, options: WriteOptions = {}): Promise<Scale> {
    return this.#transport.request<Scale>({
      method: 'PATCH',
      path: this.#objectPath(ref) + '/scale',
      query: writeQuery(options),
      body: { spec: { replicas } },
      contentType: MERGE_PATCH,
      signal: options.signal,
    });
  }

  async #put(obj: T, subresource: string, options: WriteOptions): Promise<T> {
    const updated = await this.#transport.request<T>({
      method: 'PUT',
      path: this.#objectPath(this.#refOf(obj)) + subresource,
      query: writeQuery(options),
      body: this.#typed(structuredClone(obj)),
      signal: options.signal,
    });
    return this.#typed(updated);
  }

  async #patch(
    ref: ObjectRef,
    subresource: string,
    body: unknown,
    contentType: string,
    query: Record<string, QueryValue>,
    signal: AbortSignal | undefined,
  ): Promise<T> {
    const patched = await this.#transport.request<T>({
      method: 'PATCH',
      path: this.#objectPath(ref) + subresource,
      query,
      body,
      contentType,
      signal,
    });
    return this.#typed(patched);
  }

  #refOf(obj: { metadata?: ObjectMeta }): ObjectRef {
    const name = obj.metadata?.name;
    if (!name) throw new Error(`${this.type.kind}: metadata.name is required`);
    const ref: ObjectRef = { name };
    if (obj.metadata?.namespace) ref.namespace = obj.metadata.namespace;
    return ref;
  }

  #collectionPath(namespace: string | undefined, requireNamespace = false): string {
    const { group, version, plural, namespaced } = this.type;
    const root = group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
    if (!namespaced) return `${root}/${plural}`;
    if (namespace) return `${root}/namespaces/${encodeURIComponent(namespace)}/${plural}`;
    if (requireNamespace) throw new Error(`${this.type.kind} is namespaced: metadata.namespace is required`);
    return `${root}/${plural}`;
  }

  #objectPath(ref: ObjectRef): string {
    if (!ref.name) throw new Error(`${this.type.kind}: name is required`);
    return `${this.#collectionPath(ref.namespace, true)}/${encodeURIComponent(ref.name)}`;
  }

  // List items and write bodies may lack apiVersion/kind; callers (and SSA) expect them.
  #typed<O extends { apiVersion?: string; kind?: string }>(obj: O): O {
    obj.apiVersion ??= apiVersionOf(this.type);
    obj.kind ??= this.type.kind;
    return obj;
  }
}

function writeQuery(options: WriteOptions): Record<string, QueryValue> {
  return { fieldManager: options.fieldManager, dryRun: options.dryRun ? 'All' : undefined };
}

function applyQuery(options: ApplyOptions): Record<string, QueryValue> {
  return {
    fieldManager: options.fieldManager,
    force: options.force ?? true,
    dryRun: options.dryRun ? 'All' : undefined,
  };
}
