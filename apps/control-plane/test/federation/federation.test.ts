// Federation end to end (seeds-summary, federation): two clusters — each its own real
// kube-apiserver, control plane, node agent and fake-sandboxd — sharing one
// Redis hub, with a same-named SandboxEnv in both. Cluster A's control plane
// runs in this process; cluster B's is a real process whose clock is ten
// minutes behind (libfaketime), so any expiry judged on a wall clock shows.
// Claims go through A's HTTP claim API; what each node holds is read straight
// from its fake-sandboxd. Each cluster has its peers file: A forwards to B
// with a token of its own, B accepts A and a third peer C (whose token the
// specs use to play a peer that leaked its token), and neither names any other
// cluster, whatever the hub says.
import { FEDERATION_METRIC_NAMES } from '@warmpool/federation';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { claimBodySchema, claimErrorBodySchema, formatNodeClaimRef } from '@warmpool/api';
import {
  ensureFaketime,
  eventually,
  federationRecord,
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
import { Redis } from 'ioredis';
import { silentLogger } from '@warmpool/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PeerDirectory } from '../../src/federation/peers.js';
import { FederationKeys } from '../../src/federation/keys.js';
import { FederationReporter } from '../../src/federation/reporter.js';
import type { ControlPlane } from '../../src/options.js';
import { callClaims, claimsOnNodes, serviceAccountToken } from '../support/claims.js';
import type { Fleet } from '../support/fleet.js';
import { apply, getEnv, kubectl, patch } from '../support/objects.js';
import { startReplica, type Replica } from '../support/replicas.js';
import { testWorlds, type TestWorld } from '../support/world.js';
import { claimsReady, metricSamples } from '../support/metrics.js';

const TOKEN = 'fleet-token-for-federation-tests';
/** What A presents to B, and what the third peer C presents to B. */
const A_TO_B = 'token-a-presents-to-b';
const C_TO_B = 'token-c-presents-to-b';
const IMAGE = 'registry.test/federation:1';
const NS = 'fed';
const IDLE_METRIC = FEDERATION_METRIC_NAMES.idle;
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
    /** A caller of B's own claim API (a ServiceAccount of cluster B). */
    let userB: string;

    const claimsA = (): string => a.cp.claimsUrl ?? '';
    const envClaim = (body: Record<string, unknown> = {}): ReturnType<typeof callClaims> =>
      callClaims(claimsA(), 'POST', `/v1/namespaces/${NS}/claims`, user, { env: 'python', ...body });
    /** Idle per cluster of the python Env, as A's federation gauges show its registry. */
    const idleSeenByA = async (): Promise<Map<string, number>> =>
      new Map(
        (await metricSamples(a.cp, IDLE_METRIC, { namespace: NS, env: 'python' })).map((sample) => [
          sample.labels.get('cluster') ?? '',
          sample.value,
        ]),
      );
    /** How many other clusters A sees members of. */
    const foreignSeenByA = async (): Promise<number> =>
      [...(await idleSeenByA()).keys()].filter((c) => c !== 'a').length;
    const localIdleOfA = async (): Promise<number> => (await idleSeenByA()).get('a') ?? 0;

    /**
     * Cluster B's control plane: a process, its clock CLOCK_OFFSET off, its claim queue in A's claim Redis (db 2). It
     * accepts peers a and c, each with its own token, and forwards to none.
     */
    async function startB(world: TestWorld, claimsRedis: TestRedis): Promise<Replica> {
      if ('missing' in faketime) throw new Error(faketime.missing);
      writeFileSync(join(world.dir, 'from-a.token'), A_TO_B + '\n');
      writeFileSync(join(world.dir, 'from-c.token'), C_TO_B + '\n');
      const peersFile = join(world.dir, 'peers.json');
      writeFileSync(
        peersFile,
        JSON.stringify({
          peers: [
            { id: 'a', acceptedTokenFile: 'from-a.token' },
            { id: 'c', acceptedTokenFile: 'from-c.token' },
          ],
        }),
      );
      return startReplica(world.replicaOptions('default'), 'cluster-b', {
        claims: { redisUrl: `${claimsRedis.url}/2` },
        args: () => [
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
          '--federation-peers-file',
          peersFile,
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
      userB = await serviceAccountToken(clusterB, NS, 'claimer', ['create', 'get', 'update', 'delete']);
      // B first: A's peers file names B's claim API.
      const replicaB = await startB(worldB, claimsRedis);
      b = { cluster: clusterB, fleet: worldB.fleet, proc: replicaB.proc, claimsUrl: replicaB.claimsUrl ?? '' };
      writeFileSync(join(worldA.dir, 'to-b.token'), A_TO_B + '\n');
      writeFileSync(
        join(worldA.dir, 'peers.json'),
        JSON.stringify({ peers: [{ id: 'b', claimsUrl: b.claimsUrl, tokenFile: 'to-b.token' }] }),
      );
      const peersA = new PeerDirectory(join(worldA.dir, 'peers.json'), {
        clusterId: 'a',
        graceMs: 0,
        logger: silentLogger,
      });
      worldA.defer(() => peersA.close());
      const cp = await worldA.controlPlane('default', {
        claims: worldA.claimsOptions({ redis: { url: `${claimsRedis.url}/1` }, settings: { claimTimeoutMs: 15_000 } }),
        federation: {
          clusterId: 'a',
          hub: { redis: { url: hub.url }, prefix: PREFIX },
          intervalMs: INTERVAL_MS,
          ttlMs: TTL_MS,
          peers: peersA,
        },
      });
      a = { cluster: clusterA, fleet: worldA.fleet, cp };
      await eventually(() => claimsReady(a.cp), { what: 'A ready to claim' });
      await eventually(async () => (await idleSeenByA()).get('b') === 3, {
        what: "A to see B's 3 idle sandboxes",
        timeoutMs: 60_000,
      });
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
      // B serves it in peer a's own key space.
      expect(await claimsOnNodes(b.fleet, TOKEN)).toContainEqual({
        node: claim.node,
        claimRef: formatNodeClaimRef({ door: 'fed', peer: 'a', namespace: NS, claimRef: 'spill-1', pool: 'py-b' }),
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

    it('never forwards to a cluster the hub names but no peers file does: forged records and claim URLs reach no listener', async () => {
      // The attacker's listener: anything it receives is a token handed out.
      const received: string[] = [];
      const trap: Server = createServer((req: IncomingMessage, res) => {
        received.push(`${req.method ?? ''} ${req.url ?? ''} ${req.headers.authorization ?? ''}`);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
      await new Promise<void>((resolve) => trap.listen(0, '127.0.0.1', resolve));
      const trapUrl = `http://127.0.0.1:${(trap.address() as AddressInfo).port}`;
      const raw = new Redis(hub.url);
      const keys = new FederationKeys(PREFIX);
      // Anyone who can write to the hub can report as a cluster id of their choosing.
      const forger = new FederationReporter({
        redis: raw,
        keys,
        clusterId: 'evil',
        intervalMs: 600_000,
        ttlMs: 60_000,
        records: () => [
          federationRecord({ namespace: NS, envName: 'python', memberPool: 'py-evil', scalingGroup: 'cpu' }, 100),
        ],
        logger: silentLogger,
      });
      // What a hub writer could once steer claims with: a claim URL per cluster id, B's included.
      const urlKeys = ['evil', 'b'].map((id) => `${PREFIX}:claims-url:${encodeURIComponent(id)}`);
      try {
        await forger.report();
        for (const key of urlKeys) await raw.set(key, `${trapUrl}/?swallow=`, 'PX', 60_000);
        await eventually(async () => (await idleSeenByA()).has('evil'), {
          what: "A to read the forged record (it ranks above B's)",
          timeoutMs: 30_000,
        });
        const answer = await envClaim({ claimRef: 'forged-1', ttlSeconds: 60 });
        expect(answer.status, JSON.stringify(answer.body)).toBe(200);
        const claim = claimBodySchema.parse(answer.body);
        // Served by the configured peer, at its configured URL; the forged cluster was passed over.
        expect(claim.cluster).toBe('b');
        expect((await claimsOnNodes(b.fleet, TOKEN)).map((c) => c.id)).toContain(claim.id);
        expect((await callClaims(claimsA(), 'DELETE', `/v1/namespaces/${NS}/claims/${claim.id}`, user)).status).toBe(
          204,
        );
        expect(received).toEqual([]);
      } finally {
        await raw.del(keys.records('evil'), keys.changes('evil'), ...urlKeys);
        await raw.hdel(keys.directory, 'evil');
        raw.disconnect();
        trap.closeAllConnections();
        trap.close();
      }
      await eventually(async () => (await foreignSeenByA()) === 1, {
        what: 'the forged record to age out',
        timeoutMs: 30_000,
      });
    });

    it("keeps each peer to the claims it created: peer c's token neither reads, renews nor releases a's claim or a claim of B's own caller", async () => {
      const asPeer = (token: string, method: string, path: string, body?: unknown): ReturnType<typeof callClaims> =>
        callClaims(b.claimsUrl, method, `/v1/namespaces/${NS}/claims${path}`, token, body);
      const reasonOf = (answer: Awaited<ReturnType<typeof callClaims>>): string =>
        claimErrorBodySchema.parse(answer.body).reason;
      const spilledAnswer = await envClaim({ claimRef: 'owned-by-a', ttlSeconds: 120 });
      expect(spilledAnswer.status, JSON.stringify(spilledAnswer.body)).toBe(200);
      const spilled = claimBodySchema.parse(spilledAnswer.body);
      expect(spilled.cluster).toBe('b');
      const localAnswer = await callClaims(b.claimsUrl, 'POST', `/v1/namespaces/${NS}/claims`, userB, {
        warmPool: 'py-b',
        claimRef: 'local-1',
        ttlSeconds: 120,
      });
      expect(localAnswer.status, JSON.stringify(localAnswer.body)).toBe(200);
      const local = claimBodySchema.parse(localAnswer.body);
      const deadlines = async (): Promise<Array<string | undefined>> =>
        Promise.all(
          [spilled.id, local.id].map(async (id) => {
            const got = await callClaims(b.claimsUrl, 'GET', `/v1/namespaces/${NS}/claims/${id}`, userB);
            return (got.body as { deadline?: string }).deadline;
          }),
        );
      const before = await deadlines();
      try {
        for (const id of [spilled.id, 'owned-by-a', local.id, 'local-1']) {
          expect(reasonOf(await asPeer(C_TO_B, 'GET', `/${id}`))).toBe('ClaimNotFound');
          expect(reasonOf(await asPeer(C_TO_B, 'POST', `/${id}/renew`, { ttlSeconds: 86_400 }))).toBe('ClaimNotFound');
          expect(reasonOf(await asPeer(C_TO_B, 'DELETE', `/${id}`))).toBe('ClaimNotFound');
        }
        // a's token is no better at what is not a's; it reads its own claim, without the token.
        const own = await asPeer(A_TO_B, 'GET', `/${spilled.id}`);
        expect(own.status).toBe(200);
        expect(own.body).not.toHaveProperty('token');
        expect(reasonOf(await asPeer(A_TO_B, 'GET', `/${local.id}`))).toBe('ClaimNotFound');
        expect(reasonOf(await asPeer(A_TO_B, 'DELETE', `/${local.id}`))).toBe('ClaimNotFound');
        expect(reasonOf(await asPeer(A_TO_B, 'POST', `/local-1/renew`, {}))).toBe('ClaimNotFound');
        // c's pinned creates naming the others' claimRefs: a claim of c's own, in c's key space, never theirs and
        // never their token.
        for (const claimRef of ['local-1', 'owned-by-a']) {
          const answer = await asPeer(C_TO_B, 'POST', '', {
            env: 'python',
            target: 'b::py-b',
            claimRef,
            ttlSeconds: 30,
          });
          if (answer.status === 200) {
            const own = claimBodySchema.parse(answer.body);
            expect([spilled.id, local.id]).not.toContain(own.id);
            expect([spilled.token, local.token]).not.toContain(own.token);
            expect((await asPeer(C_TO_B, 'DELETE', `/${own.id}`)).status).toBe(204);
          } else {
            expect(answer.status, JSON.stringify(answer.body)).toBe(409);
            expect(answer.body).not.toHaveProperty('token');
          }
        }
        // Both are still held, with the deadlines they had.
        expect((await claimsOnNodes(b.fleet, TOKEN)).map((c) => c.id)).toEqual(
          expect.arrayContaining([spilled.id, local.id]),
        );
        expect(await deadlines()).toEqual(before);
        // The owner's own token still renews its claim.
        expect((await asPeer(A_TO_B, 'POST', `/${spilled.id}/renew`, { ttlSeconds: 60 })).status).toBe(200);
      } finally {
        await callClaims(claimsA(), 'DELETE', `/v1/namespaces/${NS}/claims/${spilled.id}`, user);
        await callClaims(b.claimsUrl, 'DELETE', `/v1/namespaces/${NS}/claims/${local.id}`, userB);
      }
    });

    it("refuses forged forwards: target without a peer's token, a pool that is not a member, another cluster, a wrong token", async () => {
      const pinned = (token: string, body: Record<string, unknown>): ReturnType<typeof callClaims> =>
        callClaims(b.claimsUrl, 'POST', `/v1/namespaces/${NS}/claims`, token, { env: 'python', ...body });
      const before = (await claimsOnNodes(b.fleet, TOKEN)).length;
      const asUser = await envClaim({ target: 'a::py-a' });
      expect(asUser.status).toBe(403);
      expect(claimErrorBodySchema.parse(asUser.body).reason).toBe('Forbidden');
      expect(claimErrorBodySchema.parse((await pinned(A_TO_B, { target: 'b::not-a-member' })).body).reason).toBe(
        'PoolNotFound',
      );
      expect(claimErrorBodySchema.parse((await pinned(A_TO_B, { target: 'a::py-b' })).body).reason).toBe('BadRequest');
      expect(claimErrorBodySchema.parse((await pinned(A_TO_B, { env: 'other', target: 'b::py-b' })).body).reason).toBe(
        'EnvNotFound',
      );
      expect((await pinned(A_TO_B, { warmPool: 'py-b', env: undefined })).status).toBe(403);
      expect((await pinned('not-a-peer-token', { target: 'b::py-b' })).status).toBe(401);
      expect((await claimsOnNodes(b.fleet, TOKEN)).length).toBe(before);
    });

    it('keeps a claim local while A has idle sandboxes (cluster: a)', async () => {
      await patch(a.cluster, 'swp', NS, 'py-a', { spec: { replicas: 2 } });
      await eventually(async () => (await localIdleOfA()) === 2, {
        what: "A's member to have 2 idle",
        timeoutMs: 30_000,
      });
      const answer = await envClaim();
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(claimBodySchema.parse(answer.body)).toMatchObject({ cluster: 'a', memberPool: 'py-a' });
      await patch(a.cluster, 'swp', NS, 'py-a', { spec: { replicas: 0 } });
      await eventually(async () => (await localIdleOfA()) === 0, {
        what: "A's member drained again",
        timeoutMs: 30_000,
      });
    });

    it("ages B's records out by Redis's TTL when B stops reporting, although B's clock is minutes off; claims then answer 429 NoCapacity, and spill again once B is back", async () => {
      expect(await foreignSeenByA()).toBe(1);
      b.proc.kill('SIGSTOP');
      const stoppedAt = Date.now();
      try {
        await eventually(async () => (await foreignSeenByA()) === 0, {
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
      await eventually(async () => (await foreignSeenByA()) === 1, {
        what: "B's records back in A's view",
        timeoutMs: 30_000,
      });
      const again = await envClaim();
      expect(again.status, JSON.stringify(again.body)).toBe(200);
      expect(claimBodySchema.parse(again.body).cluster).toBe('b');
    });

    it('survives the hub being killed and restarted: local claims never fail, the foreign view ages out and comes back', async () => {
      await patch(a.cluster, 'swp', NS, 'py-a', { spec: { replicas: 3 } });
      await eventually(async () => (await localIdleOfA()) >= 1, {
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
      expect(await foreignSeenByA()).toBe(0);
      hub = await startRedis({ port });
      await eventually(async () => (await foreignSeenByA()) === 1, {
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
