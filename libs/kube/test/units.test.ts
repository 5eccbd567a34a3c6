// The pure parts, without an apiserver.
import { describe, expect, it } from 'vitest';
import {
  Backoff,
  KubeApiError,
  Lister,
  ObjectStore,
  isConflict,
  keyOf,
  objectKey,
  retryOnConflict,
} from '../src/index.js';
import type { ConfigMap } from './fixtures.js';
import { configMap } from './fixtures.js';

describe('objectKey', () => {
  it('is namespace/name for namespaced objects and name alone for cluster-scoped ones', () => {
    expect(objectKey('ns', 'a')).toBe('ns/a');
    expect(objectKey(undefined, 'node-1')).toBe('node-1');
    expect(keyOf(configMap('ns', 'b'))).toBe('ns/b');
  });
});

describe('Lister over an ObjectStore', () => {
  it('lists all objects or one namespace, and gets by namespace and name', () => {
    const store = new ObjectStore<ConfigMap>();
    store.upsert(configMap('a', 'x'));
    store.upsert(configMap('a', 'y'));
    store.upsert(configMap('b', 'x'));
    const lister = new Lister(store);
    expect(lister.list()).toHaveLength(3);
    expect(
      lister
        .list('a')
        .map((cm) => cm.metadata.name)
        .sort(),
    ).toEqual(['x', 'y']);
    expect(lister.list('c')).toEqual([]);
    expect(lister.get('b', 'x')).toBeDefined();
    expect(lister.get('b', 'y')).toBeUndefined();

    store.remove('a/x');
    store.remove('a/y');
    expect(lister.list('a')).toEqual([]);
    expect(lister.size).toBe(1);
  });

  it('replaces an object under the same key and returns the old one', () => {
    const store = new ObjectStore<ConfigMap>();
    const first = configMap('a', 'x', { v: '1' });
    expect(store.upsert(first)).toBeUndefined();
    expect(store.upsert(configMap('a', 'x', { v: '2' }))).toBe(first);
    expect(new Lister(store).list('a')).toHaveLength(1);
  });
});

describe('Backoff', () => {
  it('grows by the factor up to the cap, and starts over after reset', () => {
    const backoff = new Backoff({ initialMs: 100, maxMs: 500, factor: 2, jitter: 0 });
    expect([backoff.next(), backoff.next(), backoff.next(), backoff.next()]).toEqual([100, 200, 400, 500]);
    backoff.reset();
    expect(backoff.next()).toBe(100);
  });
});

describe('retryOnConflict', () => {
  const conflict = (): KubeApiError => new KubeApiError(409, 'Conflict', 'the object has been modified');

  it('retries only Conflict, not AlreadyExists (both are 409)', async () => {
    expect(isConflict(conflict())).toBe(true);
    expect(isConflict(new KubeApiError(409, 'AlreadyExists', 'exists'))).toBe(false);
    let attempts = 0;
    await expect(
      retryOnConflict(async () => {
        attempts++;
        throw new KubeApiError(409, 'AlreadyExists', 'exists');
      }),
    ).rejects.toMatchObject({ reason: 'AlreadyExists' });
    expect(attempts).toBe(1);
  });

  it('returns the first success', async () => {
    let attempts = 0;
    const value = await retryOnConflict(async (attempt) => {
      attempts = attempt;
      if (attempt < 3) throw conflict();
      return 'done';
    });
    expect(value).toBe('done');
    expect(attempts).toBe(3);
  });
});
