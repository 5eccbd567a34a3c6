import { startCluster } from '@warmpool/harness';
import type { TestCluster } from '@warmpool/harness';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Informer, ResourceClient, createInformer, objectKey } from '../src/index.js';
import type { ListerWatcher } from '../src/index.js';
import { ConfigMapType, EventLog, NamespaceType, configMap } from './fixtures.js';
import type { ConfigMap, Namespace } from './fixtures.js';

// Short enough that tests do not wait on an apiserver restart for long.
const backoff = { initialMs: 100, maxMs: 1000 };
const soon = { timeout: 15_000, interval: 50 };

describe('Informer against a real apiserver', () => {
  let cluster: TestCluster;
  let configMaps: ResourceClient<ConfigMap>;
  const opened: Array<Informer<ConfigMap> | Informer<Namespace>> = [];

  beforeAll(async () => {
    cluster = await startCluster({ name: 'kube-informer', crds: false });
    configMaps = new ResourceClient<ConfigMap>(cluster.kubeConfig, ConfigMapType);
  });

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((informer) => informer.close()));
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  function informerFor(namespace: string, options: { resyncPeriodMs?: number } = {}): Informer<ConfigMap> {
    const informer = createInformer<ConfigMap>(cluster.kubeConfig, ConfigMapType, { namespace, backoff, ...options });
    opened.push(informer);
    return informer;
  }

  it('lists what exists, then delivers adds, updates and deletes from the watch; the lister follows', async () => {
    const namespace = await cluster.createNamespace('informer');
    await configMaps.create(configMap(namespace, 'before', { v: '1' }));
    const informer = informerFor(namespace);
    const log = new EventLog();
    informer.addEventHandler(log.handlers);
    expect(informer.hasSynced()).toBe(false);
    informer.start();
    await informer.waitForSync();

    expect(informer.hasSynced()).toBe(true);
    expect(log.events).toEqual(['add before (list)']);
    expect(informer.lister.get(namespace, 'before')?.data).toEqual({ v: '1' });

    const added = await configMaps.create(configMap(namespace, 'after', { v: '1' }));
    await vi.waitFor(() => expect(log.has('add after')).toBe(true), soon);
    expect(informer.lister.get(namespace, 'after')?.metadata.resourceVersion).toBe(added.metadata.resourceVersion);

    await configMaps.replace({ ...added, data: { v: '2' } });
    await vi.waitFor(() => expect(informer.lister.get(namespace, 'after')?.data).toEqual({ v: '2' }), soon);
    expect(log.has('update after')).toBe(true);

    await configMaps.delete({ namespace, name: 'before' });
    await vi.waitFor(() => expect(log.has('delete before')).toBe(true), soon);
    expect(informer.lister.get(namespace, 'before')).toBeUndefined();
    // Only the apiserver runs here: no controller adds kube-root-ca.crt.
    expect(informer.lister.list(namespace).map((cm) => cm.metadata.name)).toEqual(['after']);
    expect(informer.resourceVersion).toMatch(/^\d+$/);
  });

  it('lists one namespace with the lister, and only what the informer watches', async () => {
    const mine = await cluster.createNamespace('mine');
    const other = await cluster.createNamespace('other');
    await configMaps.create(configMap(mine, 'm1'));
    await configMaps.create(configMap(other, 'o1'));
    const informer = informerFor(mine).start();
    await informer.waitForSync();
    expect(informer.lister.get(mine, 'm1')).toBeDefined();
    expect(informer.lister.get(other, 'o1')).toBeUndefined();
    expect(informer.lister.list(other)).toEqual([]);
    expect(informer.lister.list(mine).map((cm) => objectKey(cm.metadata.namespace, cm.metadata.name!))).toContain(
      `${mine}/m1`,
    );
  });

  it('gets cluster-scoped objects by name alone', async () => {
    const informer = createInformer<Namespace>(cluster.kubeConfig, NamespaceType, { backoff });
    opened.push(informer);
    await informer.start().waitForSync();
    expect(informer.lister.get('default')?.metadata.name).toBe('default');
    const created = await cluster.createNamespace('scoped');
    await vi.waitFor(() => expect(informer.lister.get(created)).toBeDefined(), soon);
    expect(informer.lister.list().length).toBeGreaterThanOrEqual(2);
  });

  it('caches and hands out objects as its transform makes them, from the list and from the watch', async () => {
    const namespace = await cluster.createNamespace('slim');
    await configMaps.create(configMap(namespace, 'listed', { keep: 'a', drop: 'x'.repeat(1000) }));
    const slim = (obj: ConfigMap): ConfigMap => ({ metadata: obj.metadata, data: { keep: obj.data?.['keep'] ?? '' } });
    const informer = createInformer<ConfigMap>(cluster.kubeConfig, ConfigMapType, {
      namespace,
      backoff,
      transform: (obj) => slim(obj as ConfigMap),
    });
    opened.push(informer);
    const log = new EventLog();
    const updated: ConfigMap[] = [];
    informer.addEventHandler(log.handlers);
    informer.addEventHandler({ onUpdate: (_old, obj) => updated.push(obj) });
    await informer.start().waitForSync();
    expect(informer.lister.get(namespace, 'listed')?.data).toEqual({ keep: 'a' });
    await configMaps.patch({ namespace, name: 'listed' }, { data: { keep: 'b' } });
    await vi.waitFor(() => expect(informer.lister.get(namespace, 'listed')?.data).toEqual({ keep: 'b' }), soon);
    expect(updated.at(-1)?.data).toEqual({ keep: 'b' });
  });

  it('lists in pages of pageSize, and caches every page', async () => {
    const namespace = await cluster.createNamespace('paged');
    for (let i = 0; i < 5; i++) await configMaps.create(configMap(namespace, `cm-${i}`));
    const pages: Array<number | undefined> = [];
    const source: ListerWatcher<ConfigMap> = {
      type: configMaps.type,
      list: async (options) => {
        pages.push(options?.limit);
        return configMaps.list(options);
      },
      watch: (options) => configMaps.watch(options),
    };
    const informer = new Informer<ConfigMap>(source, { namespace, backoff, pageSize: 2 });
    opened.push(informer);
    await informer.start().waitForSync();
    expect(
      informer.lister
        .list()
        .map((c) => c.metadata.name)
        .sort(),
    ).toEqual(['cm-0', 'cm-1', 'cm-2', 'cm-3', 'cm-4']);
    expect(pages).toEqual([2, 2, 2]);
  });

  it('gives a handler added after the first list the cached objects as adds', async () => {
    const namespace = await cluster.createNamespace('late');
    await configMaps.create(configMap(namespace, 'cached'));
    const informer = informerFor(namespace).start();
    await informer.waitForSync();
    const log = new EventLog();
    const remove = informer.addEventHandler(log.handlers);
    expect(log.has('add cached (list)')).toBe(true);
    remove();
    await configMaps.create(configMap(namespace, 'unseen'));
    await vi.waitFor(() => expect(informer.lister.get(namespace, 'unseen')).toBeDefined(), soon);
    expect(log.has('add unseen')).toBe(false);
  });

  it('re-delivers every cached object as an update each resync period', async () => {
    const namespace = await cluster.createNamespace('resync');
    await configMaps.create(configMap(namespace, 'steady'));
    const informer = informerFor(namespace, { resyncPeriodMs: 200 });
    const log = new EventLog();
    informer.addEventHandler(log.handlers);
    await informer.start().waitForSync();
    await vi.waitFor(
      () => expect(log.events.filter((e) => e === 'resync steady').length).toBeGreaterThanOrEqual(2),
      soon,
    );
  });

  it('keeps handlers running when one of them throws', async () => {
    const namespace = await cluster.createNamespace('throws');
    const informer = informerFor(namespace);
    const log = new EventLog();
    informer.addEventHandler({
      onAdd: () => {
        throw new Error('handler bug');
      },
    });
    informer.addEventHandler(log.handlers);
    await informer.start().waitForSync();
    await configMaps.create(configMap(namespace, 'one'));
    await configMaps.create(configMap(namespace, 'two'));
    await vi.waitFor(() => expect(log.has('add two')).toBe(true), soon);
    expect(log.has('add one')).toBe(true);
  });

  it('keeps delivering across an apiserver restart', async () => {
    const namespace = await cluster.createNamespace('restart');
    const informer = informerFor(namespace);
    const log = new EventLog();
    informer.addEventHandler(log.handlers);
    await informer.start().waitForSync();
    await configMaps.create(configMap(namespace, 'before-restart'));
    await vi.waitFor(() => expect(log.has('add before-restart')).toBe(true), soon);

    await cluster.stopApiserver();
    // Let the informer see the outage: its watch breaks and reconnects fail for a while.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await cluster.startApiserver();

    await configMaps.create(configMap(namespace, 'after-restart'));
    await vi.waitFor(() => expect(log.has('add after-restart')).toBe(true), { timeout: 30_000, interval: 100 });
    expect(informer.lister.get(namespace, 'before-restart')).toBeDefined();
    expect(informer.lister.get(namespace, 'after-restart')).toBeDefined();
    // Nothing is delivered twice as a fresh add: a relist reports only differences.
    expect(log.events.filter((e) => e.startsWith('add before-restart'))).toHaveLength(1);
  });

  it('relists when its resourceVersion has expired (410) and reports what it missed as differences', async () => {
    const namespace = await cluster.createNamespace('expired');
    await configMaps.create(configMap(namespace, 'gone'));
    const kept = await configMaps.create(configMap(namespace, 'kept', { v: 'old' }));
    const snapshot = await configMaps.list({ namespace });

    // Changes an informer that listed at the snapshot would have missed while cut off.
    await configMaps.delete({ namespace, name: 'gone' });
    await configMaps.replace({ ...kept, data: { v: 'new' } });
    await configMaps.create(configMap(namespace, 'born'));
    // The restarted apiserver's watch cache starts past the snapshot's version.
    await cluster.restartApiserver();

    // The informer's first list hands back the old snapshot, as if it had
    // listed before the restart. Its watch from there is real, and the real
    // apiserver answers it with 410 Expired.
    const real = new ResourceClient<ConfigMap>(cluster.kubeConfig, ConfigMapType);
    let lists = 0;
    const source: ListerWatcher<ConfigMap> = {
      type: real.type,
      list: async (options) => (++lists === 1 ? snapshot : real.list(options)),
      watch: (options) => real.watch(options),
    };
    const logged: string[] = [];
    const logger = { debug: () => {}, info: (msg: string) => logged.push(msg), warn: () => {}, error: () => {} };
    const informer = new Informer<ConfigMap>(source, { namespace, backoff, logger });
    opened.push(informer);
    const log = new EventLog();
    informer.addEventHandler(log.handlers);
    await informer.start().waitForSync();

    await vi.waitFor(() => expect(log.has('add born')).toBe(true), soon);
    expect(lists).toBe(2);
    expect(logged).toContain('watch resourceVersion expired; relisting');
    expect(log.events.slice(0, 2)).toEqual(['add gone (list)', 'add kept (list)']);
    // Only the differences, each once; deletions after the listed objects.
    expect(log.events.slice(2)).toEqual(expect.arrayContaining(['add born', 'update kept']));
    expect(log.events.slice(2)).toHaveLength(3);
    expect(log.events.at(-1)).toBe('delete gone');
    expect(informer.lister.get(namespace, 'gone')).toBeUndefined();
    expect(informer.lister.get(namespace, 'kept')?.data).toEqual({ v: 'new' });

    // And it watches on from the fresh list.
    await configMaps.create(configMap(namespace, 'later'));
    await vi.waitFor(() => expect(log.has('add later')).toBe(true), soon);
  });

  it('stops delivering on close(), and waitForSync rejects once closed', async () => {
    const namespace = await cluster.createNamespace('close');
    const informer = informerFor(namespace);
    const log = new EventLog();
    informer.addEventHandler(log.handlers);
    await informer.start().waitForSync();
    await informer.close();
    await configMaps.create(configMap(namespace, 'after-close'));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(log.has('add after-close')).toBe(false);

    const never = createInformer<ConfigMap>(cluster.kubeConfig, ConfigMapType, { namespace });
    const waiting = never.waitForSync();
    await never.close();
    await expect(waiting).rejects.toThrow(/stopped waiting/);
  });

  it('waitForSync rejects when its signal aborts first', async () => {
    const informer = createInformer<ConfigMap>(cluster.kubeConfig, ConfigMapType, { namespace: 'default' });
    await expect(informer.waitForSync(AbortSignal.timeout(20))).rejects.toThrow(/stopped waiting/);
    await informer.close();
  });
});
