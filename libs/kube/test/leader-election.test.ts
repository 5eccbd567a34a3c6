import { startCluster } from '@warmpool/harness';
import type { TestCluster } from '@warmpool/harness';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { LeaderElector, LeaseType, NotLeaderError, ResourceClient, loadKubeConfig } from '../src/index.js';
import type { Lease, LeaderElectorOptions } from '../src/index.js';

const timing = { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300 };

/** One candidate and what its callbacks reported. */
class Candidate {
  readonly elector: LeaderElector;
  leading = false;
  started = 0;
  stopped = 0;
  leaderSignal: AbortSignal | undefined;
  readonly newLeaders: string[] = [];

  constructor(options: Omit<LeaderElectorOptions, 'onStartedLeading'>) {
    this.elector = new LeaderElector({
      ...options,
      onStartedLeading: (signal) => {
        this.leading = true;
        this.started++;
        this.leaderSignal = signal;
      },
      onStoppedLeading: () => {
        this.leading = false;
        this.stopped++;
      },
      onNewLeader: (identity) => this.newLeaders.push(identity),
    });
  }
}

describe('LeaderElector on a real Lease', () => {
  let cluster: TestCluster;
  let namespace: string;
  let leases: ResourceClient<Lease>;
  const candidates: Candidate[] = [];
  let leaseSeq = 0;

  beforeAll(async () => {
    cluster = await startCluster({ name: 'kube-election', crds: false });
    namespace = await cluster.createNamespace('election');
    leases = new ResourceClient<Lease>(cluster.kubeConfig, LeaseType);
  });

  afterEach(async () => {
    await Promise.all(candidates.splice(0).map((c) => c.elector.close()));
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  /** Two candidates for a fresh lease, each with its own KubeConfig as separate processes would have. */
  function pair(): { name: string; a: Candidate; b: Candidate } {
    const name = `lease-${++leaseSeq}`;
    const make = (identity: string): Candidate => {
      const candidate = new Candidate({
        kubeConfig: loadKubeConfig(cluster.kubeconfigPath),
        namespace,
        name,
        identity,
        ...timing,
      });
      candidates.push(candidate);
      return candidate;
    };
    return { name, a: make('a'), b: make('b') };
  }

  async function leaderOf(name: string): Promise<Lease> {
    return leases.get({ namespace, name });
  }

  it('elects exactly one of two candidates, and both learn who leads', async () => {
    const { name, a, b } = pair();
    a.elector.start();
    b.elector.start();
    await vi.waitFor(() => expect(a.leading || b.leading).toBe(true), { timeout: 10_000, interval: 20 });
    const [leader, follower] = a.leading ? [a, b] : [b, a];
    const leaderId = leader === a ? 'a' : 'b';

    // Through several renewals the other never takes over.
    await new Promise((resolve) => setTimeout(resolve, timing.leaseDurationMs * 1.5));
    expect(leader.leading).toBe(true);
    expect(follower.leading).toBe(false);
    expect(follower.started).toBe(0);
    expect(leader.elector.isLeader()).toBe(true);
    expect(follower.elector.isLeader()).toBe(false);
    expect(follower.elector.leader).toBe(leaderId);
    expect(follower.newLeaders).toEqual([leaderId]);
    expect(leader.newLeaders).toEqual([leaderId]);

    const lease = await leaderOf(name);
    expect(lease.spec).toMatchObject({ holderIdentity: leaderId, leaseDurationSeconds: 2, leaseTransitions: 0 });
    expect(lease.spec?.renewTime).toMatch(/\.\d{6}Z$/);
  });

  it('hands over at once when the leader closes and releases the lease', async () => {
    const { name, a, b } = pair();
    a.elector.start();
    await vi.waitFor(() => expect(a.leading).toBe(true), { timeout: 10_000, interval: 20 });
    b.elector.start();
    await vi.waitFor(() => expect(b.elector.leader).toBe('a'), { timeout: 10_000, interval: 20 });

    const signal = a.leaderSignal;
    await a.elector.close();
    const releasedAt = performance.now();
    expect(a.stopped).toBe(1);
    expect(signal?.aborted).toBe(true);
    const released = await leaderOf(name);
    expect(released.spec?.holderIdentity).toBe('');

    await vi.waitFor(() => expect(b.leading).toBe(true), { timeout: 10_000, interval: 20 });
    // A released lease is taken without waiting out its duration.
    expect(performance.now() - releasedAt).toBeLessThan(timing.leaseDurationMs);
    const lease = await leaderOf(name);
    expect(lease.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    expect(b.newLeaders).toEqual(['a', 'b']);
  });

  it('takes over only after leaseDuration when the leader stops renewing without releasing (a crash)', async () => {
    const { name, a, b } = pair();
    a.elector.start();
    await vi.waitFor(() => expect(a.leading).toBe(true), { timeout: 10_000, interval: 20 });
    b.elector.start();
    await vi.waitFor(() => expect(b.elector.leader).toBe('a'), { timeout: 10_000, interval: 20 });

    await a.elector.close({ release: false });
    const crashedAt = performance.now();
    expect((await leaderOf(name)).spec?.holderIdentity).toBe('a');

    await vi.waitFor(() => expect(b.leading).toBe(true), { timeout: 15_000, interval: 20 });
    // b last saw a change at most one retry period before the crash.
    expect(performance.now() - crashedAt).toBeGreaterThanOrEqual(timing.leaseDurationMs - timing.retryPeriodMs * 2.2);
    expect((await leaderOf(name)).spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
  });

  it('creates the lease when none exists and counts each change of holder in leaseTransitions', async () => {
    const { name, a, b } = pair();
    a.elector.start();
    await vi.waitFor(() => expect(a.leading).toBe(true), { timeout: 10_000, interval: 20 });
    expect((await leaderOf(name)).spec?.leaseTransitions).toBe(0);
    b.elector.start();
    await a.elector.close();
    await vi.waitFor(() => expect(b.leading).toBe(true), { timeout: 10_000, interval: 20 });
    const c = new Candidate({ kubeConfig: cluster.kubeConfig, namespace, name, identity: 'c', ...timing });
    candidates.push(c);
    c.elector.start();
    await b.elector.close();
    await vi.waitFor(() => expect(c.leading).toBe(true), { timeout: 10_000, interval: 20 });
    expect((await leaderOf(name)).spec).toMatchObject({ holderIdentity: 'c', leaseTransitions: 2 });
  });

  it('steps down when it cannot renew within renewDeadline, and campaigns again afterwards', async () => {
    const { a } = pair();
    a.elector.start();
    await vi.waitFor(() => expect(a.leading).toBe(true), { timeout: 10_000, interval: 20 });
    const signal = a.leaderSignal;

    await cluster.stopApiserver();
    try {
      await vi.waitFor(() => expect(a.stopped).toBe(1), { timeout: 10_000, interval: 20 });
      expect(a.leading).toBe(false);
      expect(signal?.aborted).toBe(true);
    } finally {
      await cluster.startApiserver();
    }
    // Campaigns again and leads. (On a loaded machine a first re-acquire slower than renewDeadline is rightly
    // given up at once, so it may take more than one term to settle.)
    await vi.waitFor(
      () => {
        expect(a.started).toBeGreaterThanOrEqual(2);
        expect(a.leading).toBe(true);
      },
      { timeout: 20_000, interval: 50 },
    );
  });

  it('is no longer leading the moment it resumes from a pause longer than renewDeadline, and steps down', async () => {
    const { a } = pair();
    a.elector.start();
    await vi.waitFor(() => expect(a.leading).toBe(true), { timeout: 10_000, interval: 20 });
    expect(a.elector.holding()).toBe(true);
    const signal = a.leaderSignal;

    // A pause (SIGSTOP, a GC stall): the event loop does nothing for longer than the renew deadline.
    const end = performance.now() + timing.renewDeadlineMs + 200;
    while (performance.now() < end) {
      /* paused */
    }

    // Nobody took the lease, yet a renewal that starts now may not extend a deadline that has passed.
    expect(a.elector.holding()).toBe(false);
    await vi.waitFor(() => expect(a.stopped).toBe(1), { timeout: 10_000, interval: 5 });
    expect(signal?.aborted).toBe(true);
  });

  it('ends leadership at once when a re-read finds another holder, and refuses to write the lease after', async () => {
    const { name, a } = pair();
    a.elector.start();
    await vi.waitFor(() => expect(a.leading).toBe(true), { timeout: 10_000, interval: 20 });
    const signal = a.leaderSignal;
    const lease = await leaderOf(name);
    await leases.replace({ ...lease, spec: { ...lease.spec, holderIdentity: 'intruder' } });

    expect(await a.elector.confirm()).toBe(false);
    expect(signal?.aborted).toBe(true);
    expect(a.elector.holding()).toBe(false);
    await expect(a.elector.updateHeld((l) => l)).rejects.toThrow(NotLeaderError);
    await vi.waitFor(() => expect(a.stopped).toBe(1), { timeout: 10_000, interval: 20 });
  });

  it('steps down at the first renewal that sees another valid holder, not after the renew deadline', async () => {
    // A long renew deadline, so that stepping down well before it is not a matter of timing.
    const name = `lease-${++leaseSeq}`;
    const a = new Candidate({
      kubeConfig: cluster.kubeConfig,
      namespace,
      name,
      identity: 'a',
      leaseDurationMs: 40_000,
      renewDeadlineMs: 30_000,
      retryPeriodMs: 300,
    });
    candidates.push(a);
    a.elector.start();
    await vi.waitFor(() => expect(a.leading).toBe(true), { timeout: 10_000, interval: 20 });
    const lease = await leaderOf(name);
    await leases.replace({ ...lease, spec: { ...lease.spec, holderIdentity: 'intruder' } });
    await vi.waitFor(() => expect(a.stopped).toBe(1), { timeout: 15_000, interval: 20 });
    expect(a.leading).toBe(false);
    expect((await leaderOf(name)).spec?.holderIdentity).toBe('intruder');
  });

  it('writes the lease for its holder only, with the resourceVersion of a read that showed it as holder', async () => {
    const { name, a, b } = pair();
    a.elector.start();
    await vi.waitFor(() => expect(a.leading).toBe(true), { timeout: 10_000, interval: 20 });
    b.elector.start();
    const written = await a.elector.updateHeld((l) => ({
      ...l,
      metadata: { ...l.metadata, annotations: { ...l.metadata.annotations, mark: '1' } },
    }));
    expect(written.metadata.annotations?.['mark']).toBe('1');
    // Renewals keep the annotation: they write over what they read.
    await new Promise((resolve) => setTimeout(resolve, timing.retryPeriodMs * 3));
    expect((await leaderOf(name)).metadata.annotations?.['mark']).toBe('1');
    await expect(b.elector.updateHeld((l) => l)).rejects.toThrow(NotLeaderError);

    // The holder's close() still releases the lease although updateHeld() moved its resourceVersion.
    await a.elector.updateHeld((l) => ({
      ...l,
      metadata: { ...l.metadata, annotations: { ...l.metadata.annotations, mark: '2' } },
    }));
    await a.elector.close();
    expect((await leaderOf(name)).spec?.holderIdentity).not.toBe('a');
  });

  it('rejects timings that cannot be safe', () => {
    const base = { kubeConfig: cluster.kubeConfig, namespace, name: 'x', identity: 'x', onStartedLeading: () => {} };
    expect(() => new LeaderElector({ ...base, leaseDurationMs: 1000, renewDeadlineMs: 1000 })).toThrow(
      /leaseDurationMs/,
    );
    expect(
      () => new LeaderElector({ ...base, leaseDurationMs: 3000, renewDeadlineMs: 1000, retryPeriodMs: 900 }),
    ).toThrow(/retryPeriodMs/);
    expect(() => new LeaderElector({ ...base, identity: '' })).toThrow(/identity/);
  });
});
