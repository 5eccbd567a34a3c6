// Federation end to end (seeds-summary, federation): two clusters — each its own real
// kube-apiserver, control plane, node agent and fake-sandboxd — sharing one
// Redis hub, with a same-named SandboxEnv in both. Cluster A's control plane
// runs in this process; cluster B's is a real process whose clock is ten
// minutes behind (libfaketime), so any expiry judged on a wall clock shows.
// Claims go through A's HTTP claim API; what each node holds is read straight
// from its fake-sandboxd.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { claimBodySchema, claimErrorBodySchema } from '@warmpool/api';
import {
  ensureFaketime,
  eventually,
  sandboxEnv,
  sleep,
  startRedis,
  tearDown,
  template,
  warmPool,
  type NodeScript,
  type TestCluster,
  type TestRedis,
} from '@warmpool/harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlane } from './support/internals.js';
import { callClaims, claimsOnNodes, serviceAccountToken } from './support/claims.js';
import type { Fleet } from './support/fleet.js';
import { apply, getEnv, kubectl, patch } from './support/objects.js';
import { startReplica, type Replica } from './support/replicas.js';
import { testWorlds, type TestWorld } from './support/world.js';

const TOKEN = 'fleet-token-for-federation-tests';
const FEDERATION_TOKEN = 'federation-token-shared-by-a-and-b';
const IMAGE = 'registry.test/federation:1';
const NS = 'fed';
const INTERVAL_MS = 500;
const TTL_MS = 1_500;
const PREFIX = 'test:federation';
const CLOCK_OFFSET = '-10m';
const faketime = ensureFaketime();

describe.skipIf('missing' in faketime)(
  `federation across two clusters sharing one Redis hub (cluster B's clock ${CLOCK_OFFSET})`,
  () => {
    const worlds: TestWorld[] = [];
    let a: { cluster: TestCluster; fleet: Fleet; cp: ControlPlane };
    let b: { cluster: TestCluster; fleet: Fleet; proc: NodeScript; claimsUrl: string };
    let hub: TestRedis;
    let user: string;

    const claimsA = (): string => a.cp.claimsUrl ?? '';
    const envClaim = (body: Record<string, unknown> = {}): ReturnType<typeof callClaims> =>
      callClaims(claimsA(), 'POST', `/v1/namespaces/${NS}/claims`, user, { env: 'python', ...body });
    const foreignSeenByA = (): number => a.cp.federation.registry.foreignMembers(NS, 'python').length;

    /** Cluster B's control plane: a process, its clock CLOCK_OFFSET off, its claim queue in A's claim Redis (db 2). */
    async function startB(world: TestWorld, claimsRedis: TestRedis): Promise<Replica> {
      if ('missing' in faketime) throw new Error(faketime.missing);
      const federationTokenFile = join(world.dir, 'federation-token');
      writeFileSync(federationTokenFile, FEDERATION_TOKEN + '\n');
      return startReplica(world.replicaOptions('default'), 'cluster-b', {
        claims: { redisUrl: `${claimsRedis.url}/2` },
        args: ({ claimsUrl }) => [
          '--cluster-id',
          'b',
          '--federation-redis-url',
          hub.url,
          '--federation-interval',
          `${INTERVAL_MS}ms`,
          '--federation-ttl',
          `${TTL_MS}ms`,
          '--federation-prefix',
          PREFIX,
          '--federation-token-file',
          federationTokenFile,
          '--claims-advertise-url',
          claimsUrl ?? '',
        ],
        env: faketime.env(CLOCK_OFFSET),
        timeoutMs: 60_000,
      });
    }

    beforeAll(async () => {
      const fleet = { count: 1, capacity: 30 };
      worlds.push(
        ...(await testWorlds(
          { name: 'fed-a', token: TOKEN, redis: true, fleet },
          { name: 'fed-b', token: TOKEN, fleet },
        )),
      );
      const [worldA, worldB] = worlds as [TestWorld, TestWorld];
      // The claim Redis is A's (db 1 for A, db 2 for B); the hub is neither cluster's.
      const claimsRedis = worldA.redis;
      hub = await startRedis();
      worldA.defer(() => hub?.stop());
      const [clusterA, clusterB] = [worldA.cluster, worldB.cluster];
      for (const cluster of [clusterA, clusterB]) await kubectl(cluster, ['create', 'namespace', NS]);
      // A's member pool is empty and cannot grow; B's keeps 3 warm.
      await apply(
        clusterA,
        template(NS, 'tpl', IMAGE),
        warmPool(NS, 'py-a', 'tpl', 0),
        sandboxEnv(NS, 'python', { 'py-a': 'cpu' }),
      );
      await apply(
        clusterB,
        template(NS, 'tpl', IMAGE),
        warmPool(NS, 'py-b', 'tpl', 3),
        sandboxEnv(NS, 'python', { 'py-b': 'cpu' }),
      );
      user = await serviceAccountToken(clusterA, NS, 'claimer', ['create', 'get', 'update', 'delete']);
      const cp = await worldA.controlPlane('default', {
        claims: worldA.claimsOptions({ redis: { url: `${claimsRedis.url}/1` }, settings: { claimTimeoutMs: 15_000 } }),
        federation: {
          clusterId: 'a',
          hub: { redis: { url: hub.url }, prefix: PREFIX },
          intervalMs: INTERVAL_MS,
          ttlMs: TTL_MS,
          token: () => FEDERATION_TOKEN,
        },
      });
      a = { cluster: clusterA, fleet: worldA.fleet, cp };
      const replicaB = await startB(worldB, claimsRedis);
      b = { cluster: clusterB, fleet: worldB.fleet, proc: replicaB.proc, claimsUrl: replicaB.claimsUrl ?? '' };
      await eventually(() => a.cp.claims?.notReadyReasons().length === 0, { what: 'A ready to claim' });
      await eventually(
        () => a.cp.federation.registry.foreignMembers(NS, 'python').find((m) => m.clusterId === 'b' && m.idle === 3),
        { what: "A to see B's 3 idle sandboxes", timeoutMs: 60_000 },
      );
    }, 240_000);

    afterAll(() => tearDown({ dir: undefined, what: 'federation' }, ...worlds.map((world) => () => world.close())));

    it("shows each cluster its own rows and the other cluster's members in SandboxEnv status, with printer columns", async () => {
      const envB = await eventually(
        async () => {
          const env = await getEnv(b.cluster, NS, 'python');
          return env.status?.scalingGroups?.find((g) => g.name === '')?.idle === 3 && env.status.clusters?.length === 1
            ? env
            : undefined;
        },
        { what: "B's Env status", timeoutMs: 30_000 },
      );
      expect(envB.status?.scalingGroups).toEqual([
        { name: '', idle: 3, running: 0, pending: 0, desired: 3, autoscalingEnabled: false, capacity: 0 },
        { name: 'cpu', idle: 3, running: 0, pending: 0, desired: 3, autoscalingEnabled: false, capacity: 0 },
      ]);
      expect(envB.status?.clusters).toEqual([
        expect.objectContaining({ clusterId: 'a', memberPool: 'py-a', idle: 0, desired: 0 }),
      ]);
      const envA = await eventually(
        async () => {
          const env = await getEnv(a.cluster, NS, 'python');
          return env.status?.clusters?.some((c) => c.clusterId === 'b' && c.idle === 3) === true ? env : undefined;
        },
        { what: "A's Env status to mirror B", timeoutMs: 30_000 },
      );
      expect(envA.status?.clusters).toEqual([
        {
          clusterId: 'b',
          memberPool: 'py-b',
          scalingGroup: 'cpu',
          idle: 3,
          running: 0,
          pending: 0,
          desired: 3,
          autoscalingEnabled: false,
          capacity: 0,
        },
      ]);
      const table = await kubectl(b.cluster, ['get', 'senv', '-n', NS]);
      expect(table.split('\n')[0]).toMatch(/NAME\s+IDLE\s+RUNNING\s+DESIRED/);
      expect(table).toMatch(/python\s+3\s+0\s+3/);
    });

    it("exports agentbox_federation_env_* for both clusters on A's /metrics", async () => {
      const text = await (await fetch(`${a.cp.url ?? ''}/metrics`)).text();
      expect(text).toMatch(/agentbox_federation_env_idle\{cluster="b",namespace="fed",env="python",group="cpu"\} 3/);
      expect(text).toMatch(/agentbox_federation_env_desired\{cluster="a",namespace="fed",env="python",group="cpu"\} 0/);
      expect(text).toMatch(/warmpool_controlplane_federation_foreign_records 1/);
      expect(text).toMatch(/warmpool_controlplane_federation_reads_total\{kind="hint",outcome="ok"\} [1-9]/);
    });

    it("serves an Env claim from B when A's member pool is drained (cluster: b), and releases it through A", async () => {
      const answer = await envClaim({ claimRef: 'spill-1', ttlSeconds: 120 });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      const claim = claimBodySchema.parse(answer.body);
      expect(claim).toMatchObject({
        cluster: 'b',
        memberPool: 'py-b',
        warmPool: 'py-b',
        namespace: NS,
        claimRef: 'spill-1',
        token: expect.any(String),
      });
      expect(await claimsOnNodes(b.fleet, TOKEN)).toContainEqual({
        node: claim.node,
        claimRef: `${NS}/spill-1`,
        id: claim.id,
      });
      expect(await claimsOnNodes(a.fleet, TOKEN)).toEqual([]);

      // The same claimRef answers the same sandbox; get and renew work through A.
      expect(claimBodySchema.parse((await envClaim({ claimRef: 'spill-1' })).body).id).toBe(claim.id);
      const got = await callClaims(claimsA(), 'GET', `/v1/namespaces/${NS}/claims/spill-1`, user);
      expect(claimBodySchema.parse(got.body)).toMatchObject({ id: claim.id, cluster: 'b' });
      const renewed = await callClaims(claimsA(), 'POST', `/v1/namespaces/${NS}/claims/${claim.id}/renew`, user, {
        ttlSeconds: 600,
      });
      expect(renewed.status, JSON.stringify(renewed.body)).toBe(200);
      expect(Date.parse((renewed.body as { deadline: string }).deadline) - Date.now()).toBeGreaterThan(500_000);

      const released = await callClaims(claimsA(), 'DELETE', `/v1/namespaces/${NS}/claims/${claim.id}`, user);
      expect(released.status, JSON.stringify(released.body)).toBe(204);
      expect((await claimsOnNodes(b.fleet, TOKEN)).filter((c) => c.id === claim.id)).toEqual([]);
      expect((await callClaims(claimsA(), 'GET', `/v1/namespaces/${NS}/claims/spill-1`, user)).status).toBe(404);
      expect(await (await fetch(`${a.cp.url ?? ''}/metrics`)).text()).toMatch(
        /warmpool_controlplane_env_claims_total\{outcome="spilled"\} [1-9]/,
      );
    });

    it('refuses forged forwards: target without the federation token, a pool that is not a member, another cluster, a wrong token', async () => {
      const pinned = (token: string, body: Record<string, unknown>): ReturnType<typeof callClaims> =>
        callClaims(b.claimsUrl, 'POST', `/v1/namespaces/${NS}/claims`, token, { env: 'python', ...body });
      const before = (await claimsOnNodes(b.fleet, TOKEN)).length;
      const asUser = await envClaim({ target: 'a::py-a' });
      expect(asUser.status).toBe(403);
      expect(claimErrorBodySchema.parse(asUser.body).reason).toBe('Forbidden');
      expect(
        claimErrorBodySchema.parse((await pinned(FEDERATION_TOKEN, { target: 'b::not-a-member' })).body).reason,
      ).toBe('PoolNotFound');
      expect(claimErrorBodySchema.parse((await pinned(FEDERATION_TOKEN, { target: 'a::py-b' })).body).reason).toBe(
        'BadRequest',
      );
      expect(
        claimErrorBodySchema.parse((await pinned(FEDERATION_TOKEN, { env: 'other', target: 'b::py-b' })).body).reason,
      ).toBe('EnvNotFound');
      expect((await pinned(FEDERATION_TOKEN, { warmPool: 'py-b', env: undefined })).status).toBe(403);
      expect((await pinned('not-the-federation-token', { target: 'b::py-b' })).status).toBe(401);
      expect((await claimsOnNodes(b.fleet, TOKEN)).length).toBe(before);
    });

    it('keeps a claim local while A has idle sandboxes (cluster: a)', async () => {
      await patch(a.cluster, 'swp', NS, 'py-a', { spec: { replicas: 2 } });
      await eventually(() => a.cp.federation.registry.localIdle(NS, 'python') === 2, {
        what: "A's member to have 2 idle",
        timeoutMs: 30_000,
      });
      const answer = await envClaim();
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(claimBodySchema.parse(answer.body)).toMatchObject({ cluster: 'a', memberPool: 'py-a' });
      await patch(a.cluster, 'swp', NS, 'py-a', { spec: { replicas: 0 } });
      await eventually(() => a.cp.federation.registry.localIdle(NS, 'python') === 0, {
        what: "A's member drained again",
        timeoutMs: 30_000,
      });
    });

    it("ages B's records out by Redis's TTL when B stops reporting, although B's clock is minutes off; claims then answer 429 NoCapacity, and spill again once B is back", async () => {
      expect(foreignSeenByA()).toBe(1);
      b.proc.kill('SIGSTOP');
      const stoppedAt = Date.now();
      try {
        await eventually(() => foreignSeenByA() === 0, {
          what: "B's records to expire in A's view",
          timeoutMs: 30_000,
          intervalMs: 20,
        });
        const agedOutAfter = Date.now() - stoppedAt;
        // Gone within the TTL (plus one report interval and the machine's slowness), not ten minutes early or late.
        expect(agedOutAfter).toBeLessThan(TTL_MS + INTERVAL_MS + 5_000);
        const refused = await envClaim();
        expect(refused.status).toBe(429);
        expect(claimErrorBodySchema.parse(refused.body).reason).toBe('NoCapacity');
        expect(refused.headers.get('retry-after')).not.toBeNull();
      } finally {
        b.proc.kill('SIGCONT');
      }
      await eventually(() => foreignSeenByA() === 1, { what: "B's records back in A's view", timeoutMs: 30_000 });
      const again = await envClaim();
      expect(again.status, JSON.stringify(again.body)).toBe(200);
      expect(claimBodySchema.parse(again.body).cluster).toBe('b');
    });

    it('survives the hub being killed and restarted: local claims never fail, the foreign view ages out and comes back', async () => {
      await patch(a.cluster, 'swp', NS, 'py-a', { spec: { replicas: 3 } });
      await eventually(() => a.cp.federation.registry.localIdle(NS, 'python') >= 1, {
        what: "A's member to have idle",
        timeoutMs: 30_000,
      });
      const port = hub.port;
      await hub.stop();
      const statuses: number[] = [];
      const clusters: Array<string | undefined> = [];
      const until = Date.now() + TTL_MS + 2 * INTERVAL_MS;
      while (Date.now() < until) {
        const answer = await envClaim({ ttlSeconds: 30 });
        statuses.push(answer.status);
        if (answer.status === 200) {
          const claim = claimBodySchema.parse(answer.body);
          clusters.push(claim.cluster);
          await callClaims(claimsA(), 'DELETE', `/v1/namespaces/${NS}/claims/${claim.id}`, user);
        }
        await sleep(100);
      }
      expect(statuses.length).toBeGreaterThan(0);
      expect(new Set(statuses)).toEqual(new Set([200]));
      expect(new Set(clusters)).toEqual(new Set(['a']));
      expect(foreignSeenByA()).toBe(0);
      hub = await startRedis({ port });
      await eventually(() => foreignSeenByA() === 1, {
        what: 'federation to recover after the hub restarted',
        timeoutMs: 60_000,
      });
      // Said once per outage, not at every tick.
      const outage = b.proc.logLines().filter((line) => String(line['msg']).startsWith('federation hub not reachable'));
      expect(outage.length).toBeGreaterThan(0);
      expect(outage.length).toBeLessThanOrEqual(2);
    });
  },
);
