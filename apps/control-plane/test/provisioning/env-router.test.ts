// The Env claim router's choices, with the real CapacityRegistry, a real redis-server
// for the claim index, a scripted local ClaimService and scripted peer claim
// APIs (real HTTP servers on loopback) configured in a real peers file:
// where a claim goes, the next-best member when a pinned one refuses or hangs,
// the bound on attempts, each peer's own token, and never a cluster that is
// no configured peer.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SandboxEnv } from '@warmpool/api';
import { CapacityRegistry, type CapacityObservation } from '@warmpool/federation';
import { federationRecord, startRedis, type MemberRecord, type TestRedis } from '@warmpool/harness';
import { silentLogger } from '@warmpool/runtime';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PeerDirectory } from '../../src/federation/peers.js';
import { EnvClaimRouter, type EnvClaimOrder } from '../../src/provisioning/env-claim-router.js';
import { ClaimIndex } from '../../src/provisioning/claim-index.js';
import {
  ClaimFailure,
  type ClaimGrant,
  ownerMark,
  type ClaimOrder,
  type ClaimScope,
  type ClaimService,
} from '../../src/provisioning/claim-service.js';
import type { Lister } from '@warmpool/kube';

/** The HTTP claim API's scope and an owner of it (an ownerDigest). */
const HTTP: ClaimScope = { namespace: 'ns', door: 'http' };
const OWNER = '0123456789abcdef0123456789abcdef';
const OTHER_OWNER = 'fedcba9876543210fedcba9876543210';

const ENV: SandboxEnv = {
  metadata: { namespace: 'ns', name: 'env' },
  spec: { members: [{ pool: 'local-pool', scalingGroup: 'g' }] },
};
const envs = {
  get: (ns: string, name: string) => (ns === 'ns' && name === 'env' ? ENV : undefined),
  list: () => [ENV],
} as unknown as Lister<SandboxEnv>;

function foreign(
  clusterId: string,
  memberPool: string,
  idle: number,
  more: Partial<MemberRecord> = {},
): CapacityObservation {
  return {
    clusterId,
    ...federationRecord({ namespace: 'ns', envName: 'env', memberPool, scalingGroup: 'g' }, idle, more),
  };
}

/** A local pipeline that serves from a counter, or refuses with NoCapacity. */
class ScriptedClaims implements ClaimService {
  served: ClaimOrder[] = [];
  refuse = false;
  readonly #index: ClaimIndex;

  constructor(index: ClaimIndex) {
    this.#index = index;
  }

  async claim(order: ClaimOrder): Promise<ClaimGrant> {
    if (this.refuse) throw new ClaimFailure('NoCapacity', 'scripted: no room');
    this.served.push(order);
    const grant: ClaimGrant = {
      id: `sb_local${this.served.length}`,
      token: 't',
      deadline: new Date(Date.now() + 60_000).toISOString(),
      ownerAddr: '127.0.0.1:1',
      node: 'n',
      namespace: order.namespace,
      warmPool: order.warmPool,
      claimRef: order.claimRef,
      tier: 'warm',
      door: order.owner.door,
      owner: ownerMark(order.owner),
    };
    await this.#index.record(grant, '');
    return grant;
  }

  lookup(scope: ClaimScope, idOrClaimRef: string): Promise<ClaimGrant | undefined> {
    return this.#index.lookup(scope, idOrClaimRef);
  }

  async renew(): Promise<{ deadline: string }> {
    return { deadline: new Date().toISOString() };
  }

  async release(): Promise<boolean> {
    return true;
  }

  notReadyReasons(): string[] {
    return [];
  }

  async close(): Promise<void> {}
}

type PeerScript = (body: Record<string, unknown>, res: ServerResponse) => void;

describe('the Env claim router', () => {
  let redis: TestRedis;
  let connection: Redis;
  const peers = new Map<
    string,
    { server: Server; url: string; calls: Array<Record<string, unknown>>; script: PeerScript }
  >();
  let n = 0;
  let dir: string;
  let directory: PeerDirectory;
  /** Listening like a peer, with records on the hub, but in no peers file. */
  const STRANGER = 'stranger';

  async function peer(clusterId: string, script: PeerScript): Promise<void> {
    const calls: Array<Record<string, unknown>> = [];
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString()));
      req.on('end', () => {
        const body = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
        calls.push({
          ...body,
          authorization: req.headers.authorization,
          generated: req.headers['x-warmpool-claimref-generated'],
        });
        peers.get(clusterId)?.script(body, res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    peers.set(clusterId, { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls, script });
  }

  const answer =
    (status: number, body: unknown) =>
    (_: Record<string, unknown>, res: ServerResponse): void => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
  const grant =
    (cluster: string) =>
    (body: Record<string, unknown>, res: ServerResponse): void => {
      const [, pool] = String(body['target']).split('::');
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: `sb_${cluster}`,
          token: 'tok',
          deadline: new Date(Date.now() + 60_000).toISOString(),
          ownerAddr: 'x:1',
          node: 'n',
          namespace: 'ns',
          warmPool: pool,
          claimRef: body['claimRef'],
          tier: 'warm',
          cluster,
          memberPool: pool,
        }),
      );
    };

  function router(
    registry: CapacityRegistry,
    options: { maxForeignAttempts?: number; forwardTimeoutMs?: number } = {},
  ): { router: EnvClaimRouter; claims: ScriptedClaims; index: ClaimIndex } {
    const index = new ClaimIndex(connection, { prefix: `t${++n}:claims:` });
    const claims = new ScriptedClaims(index);
    return {
      claims,
      index,
      router: new EnvClaimRouter({
        claims,
        index,
        envs,
        registry,
        localRecords: () => registry.snapshot().filter((r) => r.clusterId === registry.localClusterId),
        peers: directory,
        logger: silentLogger,
        ...options,
      }),
    };
  }

  const order = (claimRef: string, digest = OWNER): EnvClaimOrder => ({
    namespace: 'ns',
    env: 'env',
    scalingGroup: '',
    scope: HTTP,
    owner: { door: 'http', digest },
    claimRef,
    ttlSeconds: 60,
    claimRefGenerated: false,
  });

  beforeAll(async () => {
    redis = await startRedis();
    connection = new Redis(redis.url);
    await peer('east', answer(429, { error: 'no room', reason: 'NoCapacity' }));
    await peer('west', answer(404, { error: 'not a member', reason: 'PoolNotFound' }));
    await peer('north', grant('north'));
    await peer('south', grant('south'));
    await peer('slow', () => undefined); // never answers
    await peer(STRANGER, grant(STRANGER));
    dir = mkdtempSync(join(tmpdir(), 'warmpool-env-router-'));
    const configured = [...peers.entries()].filter(([id]) => id !== STRANGER);
    for (const [id] of configured) writeFileSync(join(dir, `${id}.token`), `token-for-${id}\n`);
    writeFileSync(
      join(dir, 'peers.json'),
      JSON.stringify({ peers: configured.map(([id, p]) => ({ id, claimsUrl: p.url, tokenFile: `${id}.token` })) }),
    );
    directory = new PeerDirectory(join(dir, 'peers.json'), { clusterId: 'here', graceMs: 0, logger: silentLogger });
  });

  afterAll(async () => {
    for (const { server } of peers.values()) {
      server.closeAllConnections();
      server.close();
    }
    connection?.disconnect();
    directory?.close();
    await redis?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  const resetCalls = (): void => {
    for (const p of peers.values()) p.calls.length = 0;
  };

  it('stays local while this cluster has idle, and sends nothing to a peer', async () => {
    resetCalls();
    const registry = new CapacityRegistry({ localClusterId: 'here', ttlMs: 60_000 });
    registry.upsert([foreign('here', 'local-pool', 2), foreign('north', 'n-pool', 9)]);
    const { router: r, claims } = router(registry);
    expect(await r.claim(order('a1'))).toMatchObject({ cluster: 'here', memberPool: 'local-pool' });
    expect(claims.served).toHaveLength(1);
    expect(peers.get('north')?.calls).toEqual([]);
  });

  it('goes to the next-best member when the pinned one refuses, in ranking order, and records where it is served', async () => {
    resetCalls();
    const registry = new CapacityRegistry({ localClusterId: 'here', ttlMs: 60_000 });
    registry.upsert([
      foreign('here', 'local-pool', 0),
      foreign('east', 'e-pool', 9),
      foreign('west', 'w-pool', 5),
      foreign('north', 'n-pool', 2),
      foreign('south', 's-pool', 1),
    ]);
    const { router: r, claims, index } = router(registry);
    const served = await r.claim(order('b1'));
    expect(served).toMatchObject({
      cluster: 'north',
      memberPool: 'n-pool',
      grant: { id: 'sb_north', cluster: 'north' },
    });
    expect(peers.get('east')?.calls).toEqual([
      expect.objectContaining({
        env: 'env',
        target: 'east::e-pool',
        claimRef: 'b1',
        authorization: 'Bearer token-for-east',
      }),
    ]);
    expect(peers.get('west')?.calls.map((c) => c['authorization'])).toEqual(['Bearer token-for-west']);
    expect(peers.get('north')?.calls.map((c) => c['authorization'])).toEqual(['Bearer token-for-north']);
    expect(peers.get('west')?.calls.map((c) => c['target'])).toEqual(['west::w-pool']);
    expect(peers.get('south')?.calls).toEqual([]);
    expect(claims.served).toEqual([]);
    // Recorded in the caller's scope, as the caller's: not in another door's key space.
    expect(await index.lookup(HTTP, 'b1')).toMatchObject({
      id: 'sb_north',
      cluster: 'north',
      door: 'http',
      owner: OWNER,
    });
    expect(await index.lookup({ namespace: 'ns', door: 'crd' }, 'b1')).toBeUndefined();
    // The same claimRef again: the recorded claim, no second forward.
    expect((await r.claim(order('b1'))).grant.id).toBe('sb_north');
    expect(peers.get('north')?.calls).toHaveLength(1);
    // The same claimRef by another owner: refused, nothing of the claim shown, no forward.
    const refused = await r.claim(order('b1', OTHER_OWNER)).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ClaimFailure);
    expect((refused as ClaimFailure).reason).toBe('ClaimRefInUse');
    expect((refused as ClaimFailure).message).not.toContain('sb_north');
    expect(peers.get('north')?.calls).toHaveLength(1);
  });

  it('is bounded: after maxForeignAttempts refusals it answers NoCapacity, and a peer that never answers counts as a refusal', async () => {
    resetCalls();
    const registry = new CapacityRegistry({ localClusterId: 'here', ttlMs: 60_000 });
    registry.upsert([foreign('slow', 'x-pool', 9), foreign('east', 'e-pool', 8), foreign('north', 'n-pool', 1)]);
    const { router: r } = router(registry, { maxForeignAttempts: 2, forwardTimeoutMs: 300 });
    const started = performance.now();
    const failure = await r.claim(order('c1')).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ClaimFailure);
    expect((failure as ClaimFailure).reason).toBe('NoCapacity');
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(peers.get('slow')?.calls).toHaveLength(1);
    expect(peers.get('east')?.calls).toHaveLength(1);
    expect(peers.get('north')?.calls).toEqual([]);
  });

  it('spills when the local member finds no capacity although it looked idle, and tells the peer when the claimRef was generated', async () => {
    resetCalls();
    const registry = new CapacityRegistry({ localClusterId: 'here', ttlMs: 60_000 });
    registry.upsert([foreign('here', 'local-pool', 1), foreign('south', 's-pool', 3)]);
    const { router: r, claims } = router(registry);
    claims.refuse = true;
    expect(await r.claim(order('d1'))).toMatchObject({ cluster: 'south' });
    expect(await r.claim({ ...order('d2'), claimRefGenerated: true })).toMatchObject({ cluster: 'south' });
    expect(peers.get('south')?.calls.map((c) => [c['claimRef'], c['generated']])).toEqual([
      ['d1', undefined],
      ['d2', '1'],
    ]);
  });

  it('never forwards to a cluster that is no configured peer, however good its records on the hub look', async () => {
    resetCalls();
    const registry = new CapacityRegistry({ localClusterId: 'here', ttlMs: 60_000 });
    registry.upsert([foreign('here', 'local-pool', 0), foreign(STRANGER, 'x-pool', 99), foreign('south', 's-pool', 1)]);
    const { router: r } = router(registry);
    expect(await r.claim(order('s1'))).toMatchObject({ cluster: 'south' });
    registry.upsert([foreign('south', 's-pool', 0)]);
    const failure = await r.claim(order('s2')).catch((err: unknown) => err);
    expect((failure as ClaimFailure).reason).toBe('NoCapacity');
    expect(peers.get(STRANGER)?.calls).toEqual([]);
  });

  it('refuses a pinned claim for another cluster, a non-member, or a member that can no longer serve', async () => {
    const registry = new CapacityRegistry({ localClusterId: 'here', ttlMs: 60_000 });
    const { router: r, claims } = router(registry);
    const reason = async (target: string): Promise<string> =>
      ((await r.claimPinned('peer-x', order('e1'), target).catch((err: unknown) => err)) as ClaimFailure).reason;
    expect(await reason('elsewhere::local-pool')).toBe('BadRequest');
    expect(await reason('not-a-target')).toBe('BadRequest');
    expect(await reason('here::stranger')).toBe('PoolNotFound');
    expect(await reason('here::local-pool')).toBe('NoCapacity');
    registry.upsert([foreign('here', 'local-pool', 0, { autoscalingEnabled: true, capacity: -1 })]);
    expect(await r.claimPinned('peer-x', order('e2'), 'here::local-pool')).toMatchObject({
      cluster: 'here',
      memberPool: 'local-pool',
    });
    // Served in the peer's own key space: no other owner's claim named e2 can be reached from there.
    expect(claims.served.at(-1)).toMatchObject({ claimRef: 'e2', owner: { door: 'fed', peer: 'peer-x' } });
  });
});
