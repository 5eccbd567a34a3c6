import { startCluster } from '@warmpool/harness';
import type { TestCluster } from '@warmpool/harness';
import { NodeInventoryType, SandboxTemplateType, SandboxWarmPoolType } from '@warmpool/api';
import type { NodeInventory, SandboxTemplate, SandboxWarmPool } from '@warmpool/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  KubeApiError,
  ResourceClient,
  isAlreadyExists,
  isConflict,
  isInvalid,
  ignoreNotFound,
  isNotFound,
  isResourceExpired,
  pinnedWrite,
  retryOnConflict,
  statusReplacementOf,
} from '../src/index.js';
import { ConfigMapType, configMap } from './fixtures.js';
import type { ConfigMap } from './fixtures.js';

describe('ResourceClient against a real apiserver', () => {
  let cluster: TestCluster;
  let namespace: string;
  let configMaps: ResourceClient<ConfigMap>;

  beforeAll(async () => {
    cluster = await startCluster({ name: 'kube-client' });
    namespace = await cluster.createNamespace('client');
    configMaps = new ResourceClient<ConfigMap>(cluster.kubeConfig, ConfigMapType);
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  it('creates, gets, lists, replaces and deletes an object', async () => {
    const created = await configMaps.create(configMap(namespace, 'crud', { a: '1' }));
    expect(created).toMatchObject({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { namespace, name: 'crud' },
      data: { a: '1' },
    });
    expect(created.metadata.resourceVersion).toBeTruthy();

    const got = await configMaps.get({ namespace, name: 'crud' });
    expect(got.data).toEqual({ a: '1' });

    const list = await configMaps.list({ namespace });
    expect(list.resourceVersion).toMatch(/^\d+$/);
    expect(list.items.map((cm) => cm.metadata.name)).toContain('crud');
    expect(list.items.every((cm) => cm.kind === 'ConfigMap' && cm.apiVersion === 'v1')).toBe(true);

    const replaced = await configMaps.replace({ ...got, data: { a: '2' } });
    expect(replaced.data).toEqual({ a: '2' });
    expect(replaced.metadata.resourceVersion).not.toBe(got.metadata.resourceVersion);

    await configMaps.delete({ namespace, name: 'crud' });
    await expect(configMaps.get({ namespace, name: 'crud' })).rejects.toSatisfy(isNotFound);
    await expect(ignoreNotFound(configMaps.get({ namespace, name: 'crud' }))).resolves.toBeUndefined();
    // Only NotFound is ignored: a call that fails otherwise (here, aborted) still fails.
    await expect(
      ignoreNotFound(configMaps.get({ namespace, name: 'crud' }, { signal: AbortSignal.abort() })),
    ).rejects.toThrow();
  });

  it('pages a list with limit and continue', async () => {
    for (const name of ['page-a', 'page-b', 'page-c']) await configMaps.create(configMap(namespace, name));
    const first = await configMaps.list({ namespace, limit: 2, labelSelector: '' });
    expect(first.items).toHaveLength(2);
    expect(first.continue).toBeTruthy();
    const rest = await configMaps.list({ namespace, limit: 100, continue: first.continue });
    const names = [...first.items, ...rest.items].map((cm) => cm.metadata.name);
    expect(names).toEqual(expect.arrayContaining(['page-a', 'page-b', 'page-c']));
  });

  it('reports failures as KubeApiError with the code and reason of the Status body', async () => {
    const missing = await configMaps.get({ namespace, name: 'nope' }).catch((err: unknown) => err);
    expect(missing).toBeInstanceOf(KubeApiError);
    expect(missing).toMatchObject({ statusCode: 404, reason: 'NotFound' });
    expect((missing as KubeApiError).message).toContain('"nope" not found');

    const first = await configMaps.create(configMap(namespace, 'twice'));
    const duplicate = await configMaps.create(configMap(namespace, 'twice')).catch((err: unknown) => err);
    expect(duplicate).toMatchObject({ statusCode: 409, reason: 'AlreadyExists' });
    expect(isAlreadyExists(duplicate)).toBe(true);
    expect(isConflict(duplicate)).toBe(false);

    await configMaps.replace({ ...first, data: { v: 'newer' } });
    const stale = await configMaps.replace({ ...first, data: { v: 'stale' } }).catch((err: unknown) => err);
    expect(stale).toMatchObject({ statusCode: 409, reason: 'Conflict' });
    expect(isConflict(stale)).toBe(true);

    const invalid = await configMaps.create(configMap(namespace, 'Not_A_Valid_Name')).catch((err: unknown) => err);
    expect(invalid).toMatchObject({ statusCode: 422, reason: 'Invalid' });
    expect(isInvalid(invalid)).toBe(true);
    expect((invalid as KubeApiError).details?.causes?.length).toBeGreaterThan(0);
  });

  it('watches from a list resourceVersion and sees every later change, in order', async () => {
    const { resourceVersion } = await configMaps.list({ namespace });
    const stop = new AbortController();
    const seen: string[] = [];
    const watching = (async () => {
      for await (const event of configMaps.watch({ namespace, resourceVersion, signal: stop.signal })) {
        if (event.type === 'BOOKMARK') continue;
        seen.push(`${event.type} ${event.object.metadata.name}`);
        if (seen.length === 3) stop.abort();
      }
    })();
    const cm = await configMaps.create(configMap(namespace, 'watched'));
    await configMaps.replace({ ...cm, data: { x: 'y' } });
    await configMaps.delete({ namespace, name: 'watched' });
    await watching;
    expect(seen).toEqual(['ADDED watched', 'MODIFIED watched', 'DELETED watched']);
  });

  it('throws 410 Expired when a watch resumes from a resourceVersion older than the restarted apiserver keeps', async () => {
    const { resourceVersion } = await configMaps.list({ namespace });
    for (let i = 0; i < 3; i++) await configMaps.create(configMap(namespace, `churn-${i}`));
    // A restarted apiserver's watch cache starts at the current version: older ones are gone.
    await cluster.restartApiserver();
    const signal = AbortSignal.timeout(20_000);
    const err = await (async () => {
      for await (const _event of configMaps.watch({ namespace, resourceVersion, signal })) {
        // Events are not expected; the error is.
      }
    })().then(
      () => new Error('the watch ended without an error'),
      (e: unknown) => e,
    );
    expect(isResourceExpired(err)).toBe(true);
    expect(err).toMatchObject({ statusCode: 410, reason: 'Expired' });
    expect((err as KubeApiError).message).toMatch(/too old resource version/);
  });

  describe('retryOnConflict', () => {
    it('re-reads and retries when another writer got in between, keeping both writes', async () => {
      await configMaps.create(configMap(namespace, 'contended', { base: '1' }));
      const ref = { namespace, name: 'contended' };
      let attempts = 0;
      const result = await retryOnConflict(async () => {
        attempts++;
        const current = await configMaps.get(ref);
        if (attempts === 1) {
          // A second writer updates the object after our read: our write must conflict.
          await configMaps.replace({ ...current, data: { ...current.data, other: 'writer' } });
        }
        return configMaps.replace({ ...current, data: { ...current.data, mine: 'yes' } });
      });
      expect(attempts).toBe(2);
      expect(result.data).toEqual({ base: '1', other: 'writer', mine: 'yes' });
    });

    it('lands every increment of concurrent writers on one counter', async () => {
      await configMaps.create(configMap(namespace, 'counter', { n: '0' }));
      const ref = { namespace, name: 'counter' };
      const writers = 6;
      let conflicts = 0;
      await Promise.all(
        Array.from({ length: writers }, () =>
          retryOnConflict(
            async (attempt) => {
              if (attempt > 1) conflicts++;
              const current = await configMaps.get(ref);
              return configMaps.replace({ ...current, data: { n: String(Number(current.data?.['n']) + 1) } });
            },
            { steps: 50, durationMs: 5, jitter: 2 },
          ),
        ),
      );
      const final = await configMaps.get(ref);
      expect(final.data?.['n']).toBe(String(writers));
      expect(conflicts).toBeGreaterThan(0);
    });

    it('gives up after the allowed number of attempts with the last conflict', async () => {
      const cm = await configMaps.create(configMap(namespace, 'always-stale'));
      await configMaps.replace({ ...cm, data: { moved: 'on' } });
      let attempts = 0;
      const err = await retryOnConflict(
        () => {
          attempts++;
          return configMaps.replace({ ...cm, data: { stale: 'write' } });
        },
        { steps: 3, durationMs: 1 },
      ).catch((e: unknown) => e);
      expect(attempts).toBe(3);
      expect(isConflict(err)).toBe(true);
    });

    it('does not retry errors other than conflicts', async () => {
      let attempts = 0;
      const err = await retryOnConflict(() => {
        attempts++;
        return configMaps.get({ namespace, name: 'absent' });
      }).catch((e: unknown) => e);
      expect(attempts).toBe(1);
      expect(isNotFound(err)).toBe(true);
    });
  });

  describe('server-side apply and status', () => {
    let inventories: ResourceClient<NodeInventory>;

    beforeAll(() => {
      inventories = new ResourceClient<NodeInventory>(cluster.kubeConfig, NodeInventoryType);
    });

    it('creates a cluster-scoped NodeInventory by apply and records the field manager', async () => {
      const applied = await inventories.apply(
        { metadata: { name: 'node-a' }, spec: { nodeName: 'node-a', address: '10.0.0.1:7443' } },
        { fieldManager: 'node-agent' },
      );
      expect(applied).toMatchObject({
        apiVersion: 'warmpool.dev/v1alpha1',
        kind: 'NodeInventory',
        metadata: { name: 'node-a' },
        spec: { nodeName: 'node-a', address: '10.0.0.1:7443' },
      });
      const got = await inventories.get({ name: 'node-a' });
      const managers = (got.metadata as { managedFields?: Array<{ manager: string }> }).managedFields?.map(
        (f) => f.manager,
      );
      expect(managers).toContain('node-agent');
    });

    it('applies again idempotently and changes only what the manager now declares', async () => {
      const before = await inventories.get({ name: 'node-a' });
      const same = await inventories.apply(
        { metadata: { name: 'node-a' }, spec: { nodeName: 'node-a', address: '10.0.0.1:7443' } },
        { fieldManager: 'node-agent' },
      );
      expect(same.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
      const moved = await inventories.apply(
        { metadata: { name: 'node-a' }, spec: { nodeName: 'node-a', address: '10.0.0.2:7443' } },
        { fieldManager: 'node-agent' },
      );
      expect(moved.spec.address).toBe('10.0.0.2:7443');
    });

    it('refuses a second manager taking a field without force, and allows it with force', async () => {
      const contested = { metadata: { name: 'node-a' }, spec: { nodeName: 'node-a', address: '10.9.9.9:1' } };
      const refused = await inventories
        .apply(contested, { fieldManager: 'intruder', force: false })
        .catch((e: unknown) => e);
      expect(refused).toMatchObject({ statusCode: 409, reason: 'Conflict' });
      const forced = await inventories.apply(contested, { fieldManager: 'intruder', force: true });
      expect(forced.spec.address).toBe('10.9.9.9:1');
    });

    it('applies status through the status subresource, leaving spec alone', async () => {
      const applied = await inventories.applyStatus(
        {
          metadata: { name: 'node-a' },
          // Spec in a status apply is ignored by the server: the subresource only takes status.
          spec: { nodeName: 'ignored', address: 'ignored:1' },
          status: {
            pools: [{ template: 'img:1', net: 'none', size: 'small', target: 3, warm: 2, refilling: 1 }],
            claimed: 4,
            publishedAt: '2026-01-01T00:00:00Z',
          },
        },
        { fieldManager: 'node-agent' },
      );
      expect(applied.status).toMatchObject({ claimed: 4, pools: [{ template: 'img:1', warm: 2 }] });
      expect(applied.spec.nodeName).toBe('node-a');
    });

    it('merge-patches status, and a plain apply does not touch status', async () => {
      const patched = await inventories.patchStatus({ name: 'node-a' }, { claimed: 9, draining: true });
      expect(patched.status).toMatchObject({ claimed: 9, draining: true, pools: [{ template: 'img:1' }] });
      const reapplied = await inventories.apply(
        { metadata: { name: 'node-a' }, spec: { nodeName: 'node-a', address: '10.9.9.9:1' }, status: { claimed: 0 } },
        { fieldManager: 'intruder' },
      );
      expect(reapplied.status?.claimed).toBe(9);
    });

    it('reads and patches the scale subresource of a SandboxWarmPool', async () => {
      const templates = new ResourceClient<SandboxTemplate>(cluster.kubeConfig, SandboxTemplateType);
      const pools = new ResourceClient<SandboxWarmPool>(cluster.kubeConfig, SandboxWarmPoolType);
      await templates.apply(
        {
          metadata: { namespace, name: 'tpl' },
          spec: { podTemplate: { spec: { containers: [{ name: 'c', image: 'img:1' }] } } },
        },
        { fieldManager: 'test' },
      );
      await pools.apply(
        { metadata: { namespace, name: 'pool' }, spec: { replicas: 2, sandboxTemplateRef: { name: 'tpl' } } },
        { fieldManager: 'test' },
      );
      const scale = await pools.getScale({ namespace, name: 'pool' });
      expect(scale).toMatchObject({ kind: 'Scale', spec: { replicas: 2 } });
      const scaled = await pools.patchScale({ namespace, name: 'pool' }, 5);
      expect(scaled.spec.replicas).toBe(5);
      expect((await pools.get({ namespace, name: 'pool' })).spec.replicas).toBe(5);
    });
  });

  // What keeps a status computed from a cached object off a namesake (the object deleted and created again under its
  // name): the status subresource drops a write's metadata, so only the resourceVersion, and on a PUT the uid, hold.
  describe('status writes and a namesake', () => {
    let pools: ResourceClient<SandboxWarmPool>;
    const ref = (name: string): { namespace: string; name: string } => ({ namespace, name });

    beforeAll(() => {
      pools = new ResourceClient<SandboxWarmPool>(cluster.kubeConfig, SandboxWarmPoolType);
    });

    /** `name` created, deleted and created again: the first one as a cache may still hold it, and the namesake. */
    async function reborn(name: string): Promise<{ old: SandboxWarmPool; namesake: SandboxWarmPool }> {
      const pool = { metadata: { namespace, name }, spec: { replicas: 1, sandboxTemplateRef: { name: 'tpl' } } };
      const old = await pools.create(pool);
      await pools.delete(ref(name));
      return { old, namesake: await pools.create(pool) };
    }

    it('lands a server-side apply of /status that carries only the old uid on the namesake', async () => {
      const { old, namesake } = await reborn('apply-uid');
      await pools.applyStatus(
        { metadata: { namespace, name: 'apply-uid', uid: old.metadata.uid ?? '' }, status: { replicas: 7 } },
        { fieldManager: 'test', force: true },
      );
      const stored = await pools.get(ref('apply-uid'));
      expect(stored.metadata.uid).toBe(namesake.metadata.uid);
      expect(stored.status?.replicas).toBe(7);
    });

    it('refuses a server-side apply of /status at the old resourceVersion (409)', async () => {
      const { old } = await reborn('apply-rv');
      const written = await pinnedWrite(
        pools.applyStatus(
          {
            metadata: { namespace, name: 'apply-rv', resourceVersion: old.metadata.resourceVersion ?? '' },
            status: { replicas: 7 },
          },
          { fieldManager: 'test', force: true },
        ),
      );
      expect(written).toEqual({ outcome: 'moved' });
      expect((await pools.get(ref('apply-rv'))).status).toBeUndefined();
    });

    it("refuses a PUT of /status with the old uid even at the namesake's resourceVersion (409)", async () => {
      const { old, namesake } = await reborn('put-uid');
      const forged = { ...namesake, metadata: { ...namesake.metadata, uid: old.metadata.uid ?? '' } };
      const written = await pinnedWrite(pools.replaceStatus(statusReplacementOf(forged, { replicas: 7 })));
      expect(written).toEqual({ outcome: 'moved' });
      expect((await pools.get(ref('put-uid'))).status).toBeUndefined();
    });

    it('writes a PUT of /status onto the object it names, and says gone once it is deleted', async () => {
      const { namesake } = await reborn('put-own');
      const written = await pinnedWrite(pools.replaceStatus(statusReplacementOf(namesake, { replicas: 7 })));
      expect(written).toMatchObject({ outcome: 'written', object: { status: { replicas: 7 } } });
      await pools.delete(ref('put-own'));
      expect(await pinnedWrite(pools.replaceStatus(statusReplacementOf(namesake, { replicas: 8 })))).toEqual({
        outcome: 'gone',
      });
    });

    it('never builds a status PUT without a resourceVersion', () => {
      const unversioned = { metadata: { namespace, name: 'x' }, spec: { sandboxTemplateRef: { name: 'tpl' } } };
      expect(() => statusReplacementOf<SandboxWarmPool>(unversioned, { replicas: 1 })).toThrow(/no resourceVersion/);
    });
  });
});
