// The epoch record on a real apiserver: it lives on the election Lease and
// only the Lease's holder can advance it, in the same write that checks the
// holder (the fence a deposed leader cannot pass).
import { startCluster, type TestCluster } from '@warmpool/harness';
import {
  isAlreadyExists,
  LeaderElector,
  LeaseType,
  NotLeaderError,
  ResourceClient,
  retryOnConflict,
  type Lease,
} from '@warmpool/kube';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { GenerationExhaustedError, MAX_EPOCH } from '../../src/generation/generation.js';
import { EPOCH_ANNOTATION, LeaseEpochStore } from '../../src/generation/lease-epoch-store.js';

const timing = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 200 };

describe('LeaseEpochStore on the election Lease', () => {
  let cluster: TestCluster;
  let namespace: string;
  let leases: ResourceClient<Lease>;
  const electors: LeaderElector[] = [];
  let seq = 0;

  beforeAll(async () => {
    cluster = await startCluster({ name: 'cp-epoch', crds: false });
    namespace = await cluster.createNamespace('epoch');
    leases = new ResourceClient<Lease>(cluster.kubeConfig, LeaseType);
  });

  afterEach(async () => {
    await Promise.all(electors.splice(0).map((e) => e.close()));
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  /** A leader on a fresh Lease, and its epoch store. */
  async function leader(): Promise<{
    name: string;
    elector: LeaderElector;
    store: LeaseEpochStore;
    signal: () => AbortSignal | undefined;
  }> {
    const name = `lease-${++seq}`;
    let leading: AbortSignal | undefined;
    const elector = new LeaderElector({
      kubeConfig: cluster.kubeConfig,
      namespace,
      name,
      identity: 'a',
      ...timing,
      onStartedLeading: (signal) => {
        leading = signal;
      },
    });
    electors.push(elector);
    elector.start();
    await vi.waitFor(() => expect(elector.holding()).toBe(true), { timeout: 10_000, interval: 20 });
    const store = new LeaseEpochStore({
      lease: elector,
      kubeConfig: cluster.kubeConfig,
      namespace,
      legacyName: `${name}-generation`,
    });
    return { name, elector, store, signal: () => leading };
  }

  const epochOn = async (name: string): Promise<string | undefined> =>
    (await leases.get({ namespace, name })).metadata.annotations?.[EPOCH_ANNOTATION];

  /** Someone else's edit of the Lease (a successor, a human), read afresh and retried while the holder's renewals race it. */
  const editLease = (name: string, edit: (lease: Lease) => Lease): Promise<Lease> =>
    retryOnConflict(async () => leases.replace(edit(await leases.get({ namespace, name }))), { steps: 10 });

  const withEpoch = (lease: Lease, epoch: string): Lease => ({
    ...lease,
    metadata: { ...lease.metadata, annotations: { ...lease.metadata.annotations, [EPOCH_ANNOTATION]: epoch } },
  });

  it("stores each new epoch on the election Lease, and the holder's renewals keep it", async () => {
    const { name, store } = await leader();
    expect(await store.advance(1)).toBe(1);
    expect(await store.advance(1)).toBe(2);
    expect(await store.advance(10)).toBe(10);
    await new Promise((resolve) => setTimeout(resolve, timing.retryPeriodMs * 4));
    expect(await epochOn(name)).toBe('10');
    expect((await leases.get({ namespace, name })).spec?.holderIdentity).toBe('a');
  });

  it('refuses to advance once another replica holds the Lease, and that ends leadership at once', async () => {
    const { name, store, signal } = await leader();
    await store.advance(1);
    // A successor took the Lease (as after this replica was paused past its lease) and stored its epoch.
    await editLease(name, (lease) => ({ ...withEpoch(lease, '2'), spec: { ...lease.spec, holderIdentity: 'b' } }));

    await expect(store.advance(1)).rejects.toBeInstanceOf(NotLeaderError);
    expect(signal()?.aborted).toBe(true);
    expect(await epochOn(name)).toBe('2');
  });

  it('continues above the record earlier versions kept on <lease>-generation', async () => {
    const name = `lease-${seq + 1}`;
    await leases.create({
      metadata: { namespace, name: `${name}-generation`, annotations: { [EPOCH_ANNOTATION]: '41' } },
      spec: {},
    });
    const { store } = await leader();
    expect(await store.advance(1)).toBe(42);
    expect(await store.advance(1)).toBe(43);
  });

  it("takes the nodes' floor only while the Lease records no epoch (lost, or never taken)", async () => {
    const { name, store } = await leader();
    expect(await store.advance(1, undefined, 50)).toBe(50);
    // Recorded now: a floor from what nodes report (forged, say) moves nothing.
    expect(await store.advance(1, undefined, 5_000)).toBe(51);
    expect(await epochOn(name)).toBe('51');
  });

  it('hands its holder back the epoch of its previous term while the Lease still records it', async () => {
    const { name, store } = await leader();
    expect(await store.advance(1)).toBe(1);
    expect(await store.advance(1, undefined, undefined, 1)).toBe(1);
    expect(await epochOn(name)).toBe('1');
  });

  it('takes a new epoch above the record when it no longer holds the epoch to resume (another leader took one)', async () => {
    const { name, store } = await leader();
    await store.advance(1);
    await editLease(name, (lease) => withEpoch(lease, '7'));
    expect(await store.advance(1, undefined, undefined, 1)).toBe(8);
    expect(await epochOn(name)).toBe('8');
  });

  it("resumes nothing once the record is lost: the nodes' floor counts again", async () => {
    const { name, store } = await leader();
    await store.advance(1);
    await editLease(name, (lease) => {
      const { [EPOCH_ANNOTATION]: _dropped, ...others } = lease.metadata.annotations ?? {};
      return { ...lease, metadata: { ...lease.metadata, annotations: others } };
    });
    expect(await store.advance(1, undefined, 30, 1)).toBe(30);
  });

  it("resumes nothing on a Lease deleted and re-created since: the same number there is another replica's epoch", async () => {
    const { name, elector, store } = await leader();
    expect(await store.advance(1)).toBe(1);
    // Deleted, and re-created by replica b, which (no record, no majority of nodes past epoch 0 yet) took epoch 1 too.
    const now = new Date().toISOString().replace('Z', '000Z');
    for (;;) {
      await leases.delete({ namespace, name });
      const created = await leases
        .create({
          metadata: { namespace, name, annotations: { [EPOCH_ANNOTATION]: '1' } },
          spec: { holderIdentity: 'b', leaseDurationSeconds: 1, acquireTime: now, renewTime: now },
        })
        .then(
          () => true,
          (err: unknown) => {
            if (isAlreadyExists(err)) return false; // a's renewal re-created it first: again
            throw err;
          },
        );
      if (created) break;
    }
    // a steps down on seeing b, and takes the Lease back once b's lapsed: its previous term's epoch is recorded
    // again, but not by it.
    await vi.waitFor(() => expect(elector.leader).toBe('b'), { timeout: 10_000, interval: 20 });
    await vi.waitFor(() => expect(elector.holding()).toBe(true), { timeout: 10_000, interval: 20 });
    expect(await store.advance(1, undefined, undefined, 1)).toBe(2);
    expect(await epochOn(name)).toBe('2');
  });

  it('resumes nothing below the record earlier versions kept', async () => {
    const name = `lease-${seq + 1}`;
    await leases.create({
      metadata: { namespace, name: `${name}-generation`, annotations: { [EPOCH_ANNOTATION]: '41' } },
      spec: {},
    });
    const { name: taken, store } = await leader();
    await editLease(taken, (lease) => withEpoch(lease, '3'));
    expect(await store.advance(1, undefined, undefined, 3)).toBe(42);
  });

  it('writes nothing and says so when no epoch is left', async () => {
    const { name, store } = await leader();
    await editLease(name, (lease) => withEpoch(lease, String(MAX_EPOCH)));
    await expect(store.advance(1)).rejects.toBeInstanceOf(GenerationExhaustedError);
    expect(await epochOn(name)).toBe(String(MAX_EPOCH));
  });

  it('advances while its own renewals race the writes', async () => {
    const { store, elector } = await leader();
    const taken: number[] = [];
    for (let i = 0; i < 15; i++) {
      taken.push(await store.advance(1));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(taken).toEqual(Array.from({ length: 15 }, (_, i) => i + 1));
    expect(elector.holding()).toBe(true);
  });
});
