// The SandboxEnv controller's status write against a real apiserver: it lands
// only on the very Env it was computed from. A status computed from a cache
// that still holds an Env deleted meanwhile never lands on the namesake
// created after it, nor over a change it did not see; the reconciler that
// made it says so at debug, and writes the namesake its own status once the
// cache shows it. Its own writes, which the cache has not caught up with yet,
// never make it refuse itself nor write what it already wrote.
import {
  SandboxEnvType,
  type ForeignClusterMember,
  type NodeInventory,
  type SandboxEnv,
  type SandboxEnvStatus,
  type SandboxTemplate,
  type SandboxWarmPool,
} from '@warmpool/api';
import { federationRecord, sandboxEnv, startCluster, type TestCluster } from '@warmpool/harness';
import { isKubeApiError, Lister, ObjectStore, ResourceClient } from '@warmpool/kube';
import { createLogger, systemClock } from '@warmpool/runtime';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { reborn } from '../../support/namesake.js';
import { SandboxEnvReconciler } from '../../../src/controllers/sandboxenvs/reconciler.js';
import { KubeEnvStatusWriter } from '../../../src/controllers/sandboxenvs/status-writer.js';

const NAMESPACE = 'default';

/** A status as the reconciler computes it for an Env of one empty group. */
const STATUS: SandboxEnvStatus = {
  scalingGroups: [
    { name: '', idle: 4, running: 1, pending: 0, desired: 5, autoscalingEnabled: false, capacity: 0 },
    { name: 'cpu', idle: 4, running: 1, pending: 0, desired: 5, autoscalingEnabled: false, capacity: 0 },
  ],
  clusters: [],
  observedGeneration: 1,
};

describe("the SandboxEnv controller's status write", () => {
  let cluster: TestCluster;
  let envs: ResourceClient<SandboxEnv>;
  let writer: KubeEnvStatusWriter;

  beforeAll(async () => {
    cluster = await startCluster({ name: 'env-status-writer' });
    envs = new ResourceClient<SandboxEnv>(cluster.kubeConfig, SandboxEnvType);
    writer = new KubeEnvStatusWriter(cluster.kubeConfig);
  });
  afterAll(() => cluster?.stop());

  const create = (name: string): Promise<SandboxEnv> => envs.create(sandboxEnv(NAMESPACE, name, { pool: 'cpu' }));
  const recreate = (name: string): Promise<{ old: SandboxEnv; namesake: SandboxEnv }> =>
    reborn(envs, sandboxEnv(NAMESPACE, name, { pool: 'cpu' }));

  /**
   * A leading reconciler over `cache` (the Envs it sees) and the real writer: what each write came to, its log lines,
   * and how many leader runs have finished.
   */
  function reconcilerOver(
    cache: ObjectStore<SandboxEnv>,
    foreignMembers?: () => ForeignClusterMember[],
  ): { reconciler: SandboxEnvReconciler; outcomes: string[]; lines: string[]; runs: () => number } {
    const lines: string[] = [];
    const outcomes: string[] = [];
    let runs = 0;
    const reconciler = new SandboxEnvReconciler({
      envs: new Lister(cache),
      pools: new Lister(new ObjectStore<SandboxWarmPool>()),
      templates: new Lister(new ObjectStore<SandboxTemplate>()),
      inventories: new Lister(new ObjectStore<NodeInventory>()),
      writer: {
        write: async (env, status, signal) => {
          const result = await writer.write(env, status, signal);
          outcomes.push(result.outcome);
          return result;
        },
      },
      ...(foreignMembers === undefined ? {} : { foreignMembers }),
      onLeaderRun: () => {
        runs++;
        return Promise.resolve();
      },
      clock: systemClock,
      staleAfterMs: 60_000,
      intervalMs: 3_600_000,
      logger: createLogger('sandboxenvs', { level: 'debug', write: (line) => lines.push(line) }),
    });
    reconciler.lead(new AbortController().signal);
    return { reconciler, outcomes, lines, runs: () => runs };
  }

  it('cannot be given a member or autoscaling group "", the name of the whole-Env row its status keeps', async () => {
    for (const env of [
      sandboxEnv(NAMESPACE, 'empty-group', { cpu: '' }),
      sandboxEnv(NAMESPACE, 'empty-group', { cpu: 'a' }, [{ scalingGroup: '', enabled: false }]),
    ]) {
      const refused = await envs.create(env).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(isKubeApiError(refused) ? refused.statusCode : refused).toBe(422);
    }
  });

  it('writes the rows onto the Env it was computed from', async () => {
    const env = await create('plain');
    const result = await writer.write(env, STATUS);
    expect(result.outcome).toBe('written');
    const stored = await envs.get({ namespace: NAMESPACE, name: 'plain' });
    expect(stored.status).toEqual(STATUS);
    expect(stored.metadata.uid).toBe(env.metadata.uid);
  });

  it('writes nothing onto a namesake created after the Env was deleted', async () => {
    const { old, namesake } = await recreate('reborn');
    const result = await writer.write(old, STATUS);
    const stored = await envs.get({ namespace: NAMESPACE, name: 'reborn' });
    expect(stored.metadata.uid).toBe(namesake.metadata.uid);
    expect(stored.status).toBeUndefined();
    expect(result.outcome).toBe('moved');
  });

  it('writes nothing over a change it did not see', async () => {
    const stale = await create('changed');
    await envs.patch({ namespace: NAMESPACE, name: 'changed' }, { spec: { members: [] } });
    const result = await writer.write(stale, STATUS);
    expect((await envs.get({ namespace: NAMESPACE, name: 'changed' })).status).toBeUndefined();
    expect(result.outcome).toBe('moved');
  });

  it('writes nothing once the Env is gone', async () => {
    const gone = await create('gone');
    await envs.delete({ namespace: NAMESPACE, name: 'gone' });
    expect((await writer.write(gone, STATUS)).outcome).toBe('gone');
  });

  it("leaves a namesake alone when the reconciler's cache still holds the deleted Env, and says so at debug", async () => {
    const { old, namesake } = await recreate('cached');
    const cache = new ObjectStore<SandboxEnv>();
    cache.upsert(old);
    const { reconciler, outcomes, lines } = reconcilerOver(cache);
    try {
      await vi.waitFor(() => expect(outcomes).toHaveLength(1), { timeout: 10_000 });
      const stored = await envs.get({ namespace: NAMESPACE, name: 'cached' });
      expect(stored.metadata.uid).toBe(namesake.metadata.uid);
      expect(stored.status).toBeUndefined();
      expect(outcomes).toEqual(['moved']);
      const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(records.filter((r) => r['level'] === 'warn' || r['level'] === 'error')).toEqual([]);
      expect(records.find((r) => r['outcome'] !== undefined)).toMatchObject({
        level: 'debug',
        env: `${NAMESPACE}/cached`,
        outcome: 'moved',
      });
      // The cache shows the namesake (its watch event pokes a run): its own status is written.
      cache.upsert(namesake);
      reconciler.poke('env added');
      await vi.waitFor(() => expect(outcomes).toEqual(['moved', 'written']), { timeout: 10_000 });
      expect(
        (await envs.get({ namespace: NAMESPACE, name: 'cached' })).status?.scalingGroups?.map((g) => g.name),
      ).toEqual(['', 'cpu']);
    } finally {
      await reconciler.close();
    }
  });

  it('writes over its own last write while the cache has not caught up with it, and never what it wrote already', async () => {
    const env = await create('lagging');
    // The cache shows the Env as created, never the reconciler's own writes.
    const cache = new ObjectStore<SandboxEnv>();
    cache.upsert(env);
    let idle = 1;
    /** The foreign view: one member of another cluster, with `idle` sandboxes idle. */
    const member = (): ForeignClusterMember => {
      const {
        namespace: _namespace,
        envName: _envName,
        saturatedForMs: _saturated,
        ...rest
      } = federationRecord({ namespace: NAMESPACE, envName: 'lagging', memberPool: 'cpu', scalingGroup: 'cpu' }, idle);
      return { clusterId: 'east', ...rest };
    };
    const { reconciler, outcomes, runs } = reconcilerOver(cache, () => [member()]);
    /** One more run, poked, to its end. */
    const run = async (): Promise<void> => {
      const before = runs();
      reconciler.poke('test');
      await vi.waitFor(() => expect(runs()).toBeGreaterThan(before), { timeout: 10_000 });
    };
    const storedIdle = async (): Promise<number | undefined> =>
      (await envs.get({ namespace: NAMESPACE, name: 'lagging' })).status?.clusters?.[0]?.idle;
    try {
      await vi.waitFor(() => expect(runs()).toBe(1), { timeout: 10_000 });
      expect(outcomes).toEqual(['written']);
      idle = 2;
      await run();
      expect(outcomes).toEqual(['written', 'written']);
      expect(await storedIdle()).toBe(2);
      // Nothing moved: the Env has what the last write gave it, though the cache still shows no status.
      await run();
      await run();
      expect(outcomes).toEqual(['written', 'written']);
      // Back to the first status: the Env no longer has it, so it is written again.
      idle = 1;
      await run();
      expect(outcomes).toEqual(['written', 'written', 'written']);
      expect(await storedIdle()).toBe(1);
    } finally {
      await reconciler.close();
    }
  });
});
