// Exactly once through a Redis crash: a burst of claims, each with its own
// claimRef, 32 in flight, whose clients retry 5xx answers with the same
// claimRef; Redis is killed (SIGKILL) 0.4 s in and restarted empty 2 s later,
// as the chart's in-cluster Redis runs (no persistence). Every claimRef must
// end with exactly one sandbox on the nodes, the one its client was answered,
// and nothing else may be left claimed. Real apiserver, Redis, three agents
// over fake-sandboxd and two control-plane replicas.
import { sleep, template, warmPool } from '@warmpool/harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlane } from '../../src/options.js';
import { burstOnNodes, claimBurst, releaseBurst, serviceAccountToken, type ClaimBurst } from '../support/claims.js';
import { apply } from '../support/objects.js';
import { testWorld, type TestWorld } from '../support/world.js';
import { everyReadyToClaim, startClaimReplicas } from '../support/claim-replicas.js';

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
    replicas = await startClaimReplicas(world, {
      claims: { settings: { claimTimeoutMs: 6_000 } },
      warmKey: `${IMAGE}|none|small`,
      warmPerNode: 10,
    });
  });

  afterAll(() => world?.close());

  const readyToClaim = (): Promise<void> => everyReadyToClaim(replicas);

  const burstOf = (run: number): ClaimBurst => ({
    urls: () => replicas.map((r) => r.claimsUrl ?? ''),
    namespace: ns,
    token,
    warmPool: 'python',
    prefix: `r${run}`,
    claims: CLAIMS,
    inFlight: IN_FLIGHT,
  });

  /** Redis SIGKILLed 0.4 s into the burst and restarted empty 2 s later. */
  async function crashRedis(): Promise<void> {
    await sleep(400);
    process.kill(world.redis.pid, 'SIGKILL');
    await world.redis.stop();
    await sleep(2_000);
    await world.startRedisAgain();
  }

  it(`serves ${CLAIMS} claimRefs exactly once each, ${RUNS} runs, with Redis killed and restarted empty mid-burst`, async () => {
    for (let run = 0; run < RUNS; run++) {
      const burst = burstOf(run);
      const answered = await claimBurst(burst, crashRedis());
      // Whatever a job that died with Redis still had under way has settled by now.
      await sleep(3_000);
      expect({ run, ...(await burstOnNodes(world.fleet, TOKEN, burst, answered)) }).toEqual({
        run,
        duplicates: [],
        leaks: [],
        unanswered: [],
      });
      await readyToClaim();
      await releaseBurst(replicas[0]?.claimsUrl ?? '', burst);
    }
  }, 600_000);
});
