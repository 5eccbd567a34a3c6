// Exactly once through a Redis crash: a burst of claims, each with its own
// claimRef, 32 in flight, whose clients retry 5xx answers with the same
// claimRef; Redis is killed (SIGKILL) 0.4 s in and restarted empty 2 s later,
// as the chart's in-cluster Redis runs (no persistence). Every claimRef must
// end with exactly one sandbox on the nodes, the one its client was answered,
// and nothing else may be left claimed. Real apiserver, Redis, three agents
// over fake-sandboxd and two control-plane replicas.
import { claimBodySchema, parseNodeClaimRef } from '@warmpool/api';
import { eventually, sleep, template, warmPool } from '@warmpool/harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlane } from './support/internals.js';
import { callClaims, claimsOnNodes, serviceAccountToken } from './support/claims.js';
import { apply } from './support/objects.js';
import { testWorld, type TestWorld } from './support/world.js';

const TOKEN = 'fleet-token-for-crash-tests';
const IMAGE = 'registry.test/crash:1';
const CLAIMS = 600;
const IN_FLIGHT = 32;
const RUNS = 5;

describe('claims through a Redis crash (real apiserver, Redis, agents; two replicas)', () => {
  let world: TestWorld;
  let ns: string;
  let replicas: ControlPlane[];
  let token: string;

  beforeAll(async () => {
    world = await testWorld({ name: 'cp-crash', token: TOKEN, redis: true, fleet: { count: 3, capacity: 400 } });
    ns = await world.namespace('crash');
    token = await serviceAccountToken(world.cluster, ns, 'burst', ['create', 'get', 'update', 'delete']);
    await apply(world.cluster, template(ns, 'tpl', IMAGE), warmPool(ns, 'python', 'tpl', 30));
    replicas = [];
    for (let i = 0; i < 2; i++)
      replicas.push(
        await world.controlPlane('default', {
          claims: world.claimsOptions({ settings: { claimTimeoutMs: 6_000 } }),
          sandboxClaims: { janitor: { intervalMs: 3_600_000, recoveryPollMs: 200 } },
        }),
      );
    await eventually(() => replicas.some((r) => r.isLeader()), { what: 'a leader' });
    await eventually(async () => (await world.fleet.warmOf(`${IMAGE}|none|small`)).every((w) => w >= 10), {
      what: '10 warm on every node',
      timeoutMs: 30_000,
    });
    await readyToClaim();
  });

  afterAll(() => world?.close());

  async function readyToClaim(): Promise<void> {
    await eventually(() => replicas.every((r) => r.claims?.notReadyReasons().length === 0), {
      what: 'every replica ready to claim',
      timeoutMs: 30_000,
    });
  }

  /** Claims until answered 200, retrying 5xx with the same claimRef; answers the sandbox id. */
  async function claimUntilServed(claimRef: string, n: number): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      const url = replicas[(n + attempt) % replicas.length]?.claimsUrl ?? '';
      const answer = await callClaims(url, 'POST', `/v1/namespaces/${ns}/claims`, token, {
        warmPool: 'python',
        claimRef,
        ttlSeconds: 600,
      });
      if (answer.status === 200) return claimBodySchema.parse(answer.body).id;
      if (answer.status < 500 && answer.status !== 429) throw new Error(`${claimRef}: ${JSON.stringify(answer.body)}`);
      await sleep(100);
    }
  }

  async function burst(run: number): Promise<Map<string, string>> {
    const answered = new Map<string, string>();
    let next = 0;
    const lane = async (): Promise<void> => {
      for (let n = next++; n < CLAIMS; n = next++) {
        const claimRef = `r${run}-c${n}`;
        answered.set(claimRef, await claimUntilServed(claimRef, n));
      }
    };
    const crash = (async (): Promise<void> => {
      await sleep(400);
      process.kill(world.redis.pid, 'SIGKILL');
      await world.redis.stop();
      await sleep(2_000);
      await world.startRedisAgain();
    })();
    await Promise.all([...Array.from({ length: IN_FLIGHT }, lane), crash]);
    return answered;
  }

  it(`serves ${CLAIMS} claimRefs exactly once each, ${RUNS} runs, with Redis killed and restarted empty mid-burst`, async () => {
    for (let run = 0; run < RUNS; run++) {
      const answered = await burst(run);
      // Whatever a job that died with Redis still had under way has settled by now.
      await sleep(3_000);
      const held = (await claimsOnNodes(world.fleet, TOKEN)).filter((row) => {
        const owner = parseNodeClaimRef(row.claimRef);
        return owner?.door === 'http' && owner.namespace === ns && owner.claimRef.startsWith(`r${run}-`);
      });
      const byClaimRef = new Map<string, string[]>();
      for (const row of held) {
        const claimRef = (parseNodeClaimRef(row.claimRef) as { claimRef: string }).claimRef;
        byClaimRef.set(claimRef, [...(byClaimRef.get(claimRef) ?? []), row.id]);
      }
      const duplicates = [...byClaimRef].filter(([, ids]) => ids.length > 1);
      const leaks = held.filter((row) => ![...answered.values()].includes(row.id));
      expect({ run, duplicates, leaks: leaks.length }).toEqual({ run, duplicates: [], leaks: 0 });
      expect([...answered].every(([claimRef, id]) => byClaimRef.get(claimRef)?.[0] === id)).toBe(true);

      await readyToClaim();
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async (_, lane) => {
          for (let n = lane; n < CLAIMS; n += IN_FLIGHT)
            await callClaims(
              replicas[0]?.claimsUrl ?? '',
              'DELETE',
              `/v1/namespaces/${ns}/claims/r${run}-c${n}`,
              token,
            );
        }),
      );
    }
  }, 600_000);
});
