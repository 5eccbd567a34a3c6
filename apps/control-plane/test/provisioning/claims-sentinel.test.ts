// Claims through a Redis Sentinel failover: a primary, one asynchronous
// replica and three Sentinels (Debian's redis-server and redis-sentinel on
// loopback, no persistence). The primary is SIGKILLed in the middle of a
// burst of 600 claims at 32 in flight; the replica the Sentinels promote may
// lack the latest keys, which is what "the nodes are the truth" absorbs:
// claims go on after the failover, each claimRef ends with exactly one
// sandbox, nothing leaks, and no sandbox claimed before the burst is released.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseHostPort } from '@warmpool/runtime';
import {
  eventually,
  sleep,
  startSentinelTopology,
  template,
  warmPool,
  type TestSentinelTopology,
} from '@warmpool/harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlane } from '../../src/options.js';
import {
  burstOnNodes,
  claimBurst,
  claimsOnNodes,
  releaseBurst,
  serviceAccountToken,
  type ClaimBurst,
} from '../support/claims.js';
import { apply } from '../support/objects.js';
import { testWorld, type TestWorld } from '../support/world.js';
import { claimsReady } from '../support/metrics.js';

const TOKEN = 'fleet-token-for-sentinel-tests';
const IMAGE = 'registry.test/sentinel:1';
const PASSWORD = 'redis-secret-for-the-claims';

describe('claims through a Sentinel failover (real apiserver, Redis + Sentinels, agents; two replicas)', () => {
  let world: TestWorld;
  let topology: TestSentinelTopology;
  let dir: string;
  let ns: string;
  let token: string;
  let replicas: ControlPlane[];

  beforeAll(async () => {
    [world, topology] = await Promise.all([
      testWorld({ name: 'cp-sentinel', token: TOKEN, redis: true, fleet: { count: 3, capacity: 400 } }),
      startSentinelTopology({ password: PASSWORD }),
    ]);
    dir = mkdtempSync(join(tmpdir(), 'warmpool-claims-sentinel-'));
    writeFileSync(join(dir, 'password'), `${PASSWORD}\n`);
    ns = await world.namespace('sentinel');
    token = await serviceAccountToken(world.cluster, ns, 'burst', ['create', 'get', 'update', 'delete']);
    await apply(world.cluster, template(ns, 'tpl', IMAGE), warmPool(ns, 'python', 'tpl', 30));
    const redis = {
      // Never dialed: the Sentinels name the primary.
      url: 'redis://primary.invalid/0',
      passwordFile: join(dir, 'password'),
      sentinel: { hosts: topology.sentinels.map((s) => parseHostPort(s)), masterName: topology.masterName },
    };
    replicas = [];
    for (let i = 0; i < 2; i++)
      replicas.push(
        await world.controlPlane('default', {
          claims: { ...world.claimsOptions({ settings: { claimTimeoutMs: 6_000 } }), redis },
          sandboxClaims: { janitor: { intervalMs: 3_600_000, recoveryPollMs: 200 } },
        }),
      );
    await eventually(() => replicas.some((r) => r.isLeader()), { what: 'a leader' });
    await eventually(async () => (await world.fleet.warmOf(`${IMAGE}|none|small`)).every((w) => w >= 10), {
      what: '10 warm on every node',
      timeoutMs: 30_000,
    });
    await eventually(async () => (await Promise.all(replicas.map(claimsReady))).every(Boolean), {
      what: 'every replica ready to claim through the Sentinels',
      timeoutMs: 30_000,
    });
  });

  afterAll(async () => {
    await world?.close();
    await topology?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('goes on claiming after the primary is killed mid-burst: no duplicate, no leak, nothing live released', async () => {
    const burstOf = (prefix: string, claims: number): ClaimBurst => ({
      urls: () => replicas.map((r) => r.claimsUrl ?? ''),
      namespace: ns,
      token,
      warmPool: 'python',
      prefix,
      claims,
      inFlight: 32,
    });
    const before = burstOf('live', 30);
    const live = await claimBurst(before, Promise.resolve());

    const burst = burstOf('burst', 600);
    const failover = (async (): Promise<void> => {
      await sleep(400);
      const killed = await topology.killPrimary();
      await topology.waitForFailover({ from: killed });
    })();
    const answered = await claimBurst(burst, failover);
    await sleep(3_000);

    expect(await burstOnNodes(world.fleet, TOKEN, burst, answered)).toEqual({
      duplicates: [],
      leaks: [],
      unanswered: [],
    });
    const held = new Set((await claimsOnNodes(world.fleet, TOKEN)).map((row) => row.id));
    expect([...live.values()].filter((id) => !held.has(id))).toEqual([]);

    await releaseBurst(replicas[0]?.claimsUrl ?? '', burst);
    await releaseBurst(replicas[0]?.claimsUrl ?? '', before);
  }, 300_000);
});
