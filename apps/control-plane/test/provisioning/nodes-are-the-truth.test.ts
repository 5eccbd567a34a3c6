// The nodes are the source of truth for every claimed sandbox; Redis is an
// accelerator that may lose any key. Real apiserver, Redis, three agents over
// fake-sandboxd and two control-plane replicas: Redis restarted empty loses no
// live claim, a renewal made at the node keeps its sandbox, a claimRef is
// replayed only to its owner, and each key in Redis has one owner.
import { claimBodySchema, claimErrorBodySchema } from '@warmpool/api';
import { eventually, template, warmPool, type TestCluster } from '@warmpool/harness';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlane } from '../../src/options.js';
import { ClaimIndex } from '../../src/provisioning/claim-index.js';
import { callClaims, claimsOnNodes, serviceAccountToken } from '../support/claims.js';
import type { Fleet } from '../support/fleet.js';
import { apply } from '../support/objects.js';
import { testWorld, type TestWorld } from '../support/world.js';
import { claimsReady, janitorSweeps, metricSum } from '../support/metrics.js';

const TOKEN = 'fleet-token-for-truth-tests';
const IMAGE = 'registry.test/truth:1';

const RECOVERING = 'warmpool_controlplane_claim_index_recovering';

describe('the nodes are the truth (real apiserver, Redis, agents; two replicas)', () => {
  let world: TestWorld;
  let cluster: TestCluster;
  let fleet: Fleet;
  let ns: string;
  let a: ControlPlane;
  let b: ControlPlane;
  let alice: string;
  let bob: string;

  const path = (rest = ''): string => `/v1/namespaces/${ns}/claims${rest}`;
  const onNodes = (): ReturnType<typeof claimsOnNodes> => claimsOnNodes(fleet, TOKEN);

  async function replica(): Promise<ControlPlane> {
    return world.controlPlane('default', {
      claims: world.claimsOptions({ settings: { claimTimeoutMs: 10_000 } }),
      sandboxClaims: { janitor: { intervalMs: 1_000, recoveryPollMs: 200, settleMs: 2_500 } },
    });
  }

  async function claim(token: string, body: Record<string, unknown>): Promise<{ status: number; body: unknown }> {
    return callClaims(a.claimsUrl ?? '', 'POST', path(), token, body);
  }

  beforeAll(async () => {
    world = await testWorld({ name: 'cp-truth', token: TOKEN, redis: true, fleet: { count: 3, capacity: 60 } });
    ({ cluster, fleet } = world);
    ns = await world.namespace('truth');
    [alice, bob] = await Promise.all([
      serviceAccountToken(cluster, ns, 'alice', ['create', 'get', 'update', 'delete']),
      serviceAccountToken(cluster, ns, 'bob', ['create', 'get', 'update', 'delete']),
    ]);
    await apply(
      cluster,
      template(ns, 'tpl', IMAGE),
      warmPool(ns, 'python', 'tpl', 12),
      warmPool(ns, 'other', 'tpl', 0),
    );
    a = await replica();
    b = await replica();
    await eventually(() => a.isLeader() || b.isLeader(), { what: 'a leader' });
    await eventually(async () => (await fleet.warmOf(`${IMAGE}|none|small`)).every((w) => w >= 4), {
      what: '4 warm on every node',
      timeoutMs: 30_000,
    });
    await eventually(async () => (await claimsReady(a)) && (await claimsReady(b)), {
      what: 'both replicas ready to claim',
      timeoutMs: 30_000,
    });
  });

  afterAll(() => world?.close());

  it('loses no live claim when Redis restarts empty: each answers get, renew and release from the nodes', async () => {
    const served = [];
    for (let i = 0; i < 12; i++) {
      const answer = await claim(alice, { warmPool: 'python', claimRef: `live-${i}`, ttlSeconds: 600 });
      expect(answer.status).toBe(200);
      served.push(claimBodySchema.parse(answer.body));
    }
    const before = (await onNodes()).length;

    await world.redis.stop();
    await world.startRedisAgain();
    // Operators see the recovery (claims are slower meanwhile): the gauge reads 1 until a complete sweep ends it.
    await eventually(async () => (await metricSum(a, RECOVERING)) === 1, {
      what: 'the replica reports the claim index recovering',
      timeoutMs: 15_000,
      intervalMs: 100,
    });
    await eventually(async () => (await claimsReady(a)) && (await claimsReady(b)), {
      what: 'both replicas connected to the new Redis',
      timeoutMs: 15_000,
    });
    // The leader's janitor sweeps at once while the index recovers: it must release nothing.
    const admin = new Redis(world.redis.url);
    try {
      // The recovery marker, read where the replicas keep it.
      const index = new ClaimIndex(admin);
      await eventually(async () => (await index.recovering()) === undefined, {
        what: 'the index rebuilt from the nodes',
        timeoutMs: 20_000,
      });
    } finally {
      admin.disconnect();
    }
    expect((await onNodes()).length).toBe(before);
    expect(await metricSum(a, RECOVERING)).toBe(0);
    expect(await metricSum(b, RECOVERING)).toBe(0);

    for (const [i, sandbox] of served.entries()) {
      const replicaUrl = (i % 2 === 0 ? a : b).claimsUrl ?? '';
      const got = await callClaims(replicaUrl, 'GET', path(`/${sandbox.claimRef}`), alice);
      expect(got.status).toBe(200);
      // Rebuilt from the node alone, with the owner address its NodeInventory publishes.
      expect(claimBodySchema.parse(got.body)).toMatchObject({
        id: sandbox.id,
        node: sandbox.node,
        ownerAddr: sandbox.ownerAddr,
      });
      expect(JSON.stringify(got.body)).not.toContain(sandbox.token ?? '-');
      const byId = await callClaims(replicaUrl, 'GET', path(`/${sandbox.id}`), alice);
      expect(byId.status).toBe(200);
      const renewed = await callClaims(replicaUrl, 'POST', path(`/${sandbox.id}/renew`), alice, { ttlSeconds: 900 });
      expect(renewed.status).toBe(200);
    }
    for (const sandbox of served) {
      const released = await callClaims(b.claimsUrl ?? '', 'DELETE', path(`/${sandbox.claimRef}`), alice);
      expect(released.status).toBe(204);
    }
    expect((await onNodes()).length).toBe(before - served.length);
  });

  it('keeps a sandbox renewed at its node after the index entry expired', async () => {
    const answer = await claim(alice, { warmPool: 'python', claimRef: 'renewed-at-node', ttlSeconds: 2 });
    const sandbox = claimBodySchema.parse(answer.body);
    const node = fleet.nodes.find((n) => n.name === sandbox.node);
    // The agent lets a sandbox's own token renew it.
    const res = await fetch(`${node?.agentUrl}/v1/sandboxes/${sandbox.id}/renew`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sandbox.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ttl_seconds: 900 }),
    });
    expect(res.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 2_500)); // the index key expired at the old deadline
    const leader = a.isLeader() ? a : b;
    const releasedBefore = await metricSum(leader, 'warmpool_controlplane_claim_janitor_releases_total');
    // Two: the first may have begun before the index entry expired.
    await janitorSweeps(leader, 2);
    expect(await metricSum(leader, 'warmpool_controlplane_claim_janitor_releases_total')).toBe(releasedBefore);
    expect((await onNodes()).some((row) => row.id === sandbox.id)).toBe(true);
    const got = await callClaims(b.claimsUrl ?? '', 'GET', path('/renewed-at-node'), alice);
    expect(got.status).toBe(200);
    expect(Date.parse(claimBodySchema.parse(got.body).deadline)).toBeGreaterThan(Date.now() + 600_000);
    // A replay past the recorded deadline asks the node, and answers the same sandbox.
    const replay = await claim(alice, { warmPool: 'python', claimRef: 'renewed-at-node', ttlSeconds: 2 });
    expect(claimBodySchema.parse(replay.body)).toMatchObject({ id: sandbox.id, token: sandbox.token });
    expect(
      (await onNodes()).filter((row) => row.id !== sandbox.id && row.claimRef?.includes('/renewed-at-node/')),
    ).toEqual([]);
    expect((await callClaims(a.claimsUrl ?? '', 'DELETE', path('/renewed-at-node'), alice)).status).toBe(204);
  });

  it('keeps exactly once when Redis loses its keys without a restart (FLUSHALL): a replay finds its sandbox on the nodes', async () => {
    const mine = claimBodySchema.parse((await claim(alice, { warmPool: 'python', claimRef: 'flushed-mine' })).body);
    const hers = claimBodySchema.parse((await claim(alice, { warmPool: 'python', claimRef: 'flushed-hers' })).body);
    const redis = new Redis(world.redis.url);
    try {
      await redis.flushall();
    } finally {
      redis.disconnect();
    }
    const before = (await onNodes()).length;
    const replay = await callClaims(b.claimsUrl ?? '', 'POST', path(), alice, {
      warmPool: 'python',
      claimRef: 'flushed-mine',
    });
    expect(claimBodySchema.parse(replay.body)).toMatchObject({ id: mine.id, token: mine.token });
    const stolen = await claim(bob, { warmPool: 'python', claimRef: 'flushed-hers' });
    expect(stolen.status).toBe(409);
    expect(claimErrorBodySchema.parse(stolen.body).reason).toBe('ClaimRefInUse');
    expect(JSON.stringify(stolen.body)).not.toContain(hers.token ?? '-');
    expect((await onNodes()).length).toBe(before);
    for (const ref of ['flushed-mine', 'flushed-hers'])
      expect((await callClaims(a.claimsUrl ?? '', 'DELETE', path(`/${ref}`), alice)).status).toBe(204);
  });

  it('replays a claimRef only to its owner, for the same pool: anyone else gets 409 ClaimRefInUse and no token', async () => {
    const first = claimBodySchema.parse((await claim(alice, { warmPool: 'python', claimRef: 'mine' })).body);
    const again = await claim(alice, { warmPool: 'python', claimRef: 'mine' });
    expect(claimBodySchema.parse(again.body)).toMatchObject({ id: first.id, token: first.token });

    const before = (await onNodes()).length;
    for (const [token, body] of [
      [bob, { warmPool: 'python', claimRef: 'mine' }],
      [alice, { warmPool: 'other', claimRef: 'mine' }],
    ] as const) {
      const answer = await claim(token, body);
      expect(answer.status).toBe(409);
      expect(claimErrorBodySchema.parse(answer.body).reason).toBe('ClaimRefInUse');
      expect(JSON.stringify(answer.body)).not.toContain(first.token ?? '-');
    }
    // Bob can read it (get on sandboxclaims), but not through a replay.
    expect((await onNodes()).length).toBe(before);
    expect((await callClaims(a.claimsUrl ?? '', 'DELETE', path('/mine'), alice)).status).toBe(204);
  });

  it('gives one claimRef asked by two identities at once (one batch) to one of them only: the other gets 409, no token', async () => {
    for (let round = 0; round < 5; round++) {
      const claimRef = `race-${round}`;
      const answers = await Promise.all([alice, bob].map((token) => claim(token, { warmPool: 'python', claimRef })));
      expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
      const served = claimBodySchema.parse(answers.find((a) => a.status === 200)?.body);
      const refused = answers.find((a) => a.status === 409);
      expect(claimErrorBodySchema.parse(refused?.body).reason).toBe('ClaimRefInUse');
      expect(JSON.stringify(refused?.body)).not.toContain(served.token ?? '-');
      const winner = answers[0]?.status === 200 ? alice : bob;
      expect((await callClaims(a.claimsUrl ?? '', 'DELETE', path(`/${claimRef}`), winner)).status).toBe(204);
    }
  });

  it('gives each Redis key one owner: the claim index, the reply lists and the queue in their own key spaces', async () => {
    for (let i = 0; i < 6; i++) await claim(alice, { warmPool: 'python', claimRef: `keys-${i}` });
    const redis = new Redis(world.redis.url);
    try {
      const keys = await redis.keys('*');
      const owners = ['warmpool:index:', 'warmpool:replies:', 'warmpool:bull:'];
      const unowned = keys.filter((key) => owners.filter((owner) => key.startsWith(owner)).length !== 1);
      expect(unowned).toEqual([]);
      expect(keys).toContain('warmpool:index:events');
      expect(keys.some((key) => key.startsWith('warmpool:bull:claims:'))).toBe(true);
    } finally {
      redis.disconnect();
    }
    for (let i = 0; i < 6; i++) await callClaims(a.claimsUrl ?? '', 'DELETE', path(`/keys-${i}`), alice);
  });
});
