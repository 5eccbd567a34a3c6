// Claims through a Redis that stops answering (SIGSTOP: connections stay
// open, nothing answers), the failure TCP takes minutes to notice. A claim
// is answered 503 within the Redis timeout, with a message naming Redis,
// rather than waiting out its claim timeout, as often as it is asked; an
// idle replica turns unready to claim within the timeout too, and closes
// within it (a shutdown fits --shutdown-timeout); after
// SIGCONT the replicas serve again, and a burst of clients that retry with their claimRef through a
// freeze still gets exactly one sandbox per claimRef. Real apiserver,
// Redis, two agents over fake-sandboxd, two control-plane replicas.
import { parseNodeClaimRef } from '@warmpool/api';
import { eventually, Freezer, sleep, template, warmPool } from '@warmpool/harness';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlane } from '../../src/options.js';
import {
  burstOnNodes,
  callClaims,
  claimBurst,
  claimsOnNodes,
  releaseBurst,
  serviceAccountToken,
  type ClaimBurst,
} from '../support/claims.js';
import { everyReadyToClaim, startClaimReplicas } from '../support/claim-replicas.js';
import { startReplica } from '../support/replicas.js';
import { claimsReady } from '../support/metrics.js';
import { apply } from '../support/objects.js';
import { testWorld, type TestWorld } from '../support/world.js';

const TOKEN = 'fleet-token-for-frozen-redis-tests';
const IMAGE = 'registry.test/frozen:1';
/** The replicas' Redis timeout (--redis-timeout). */
const REDIS_TIMEOUT_MS = 1_000;
/** Far above what a claim waits for a frozen Redis, so an answer before it comes from the Redis timeout. */
const CLAIM_TIMEOUT_MS = 30_000;
/** What a bounded failure may take on a loaded CI machine. */
const BOUND_MS = 15_000;
/**
 * A replica's SIGTERM with Redis stopped: one Redis timeout, then its connections are cut, and the process exits. Its
 * close used to wait out BullMQ's 10 s block twice, and the Queue's QUIT too, until --shutdown-timeout gave up.
 */
const CLOSE_BOUND_MS = 5_000;

describe('claims through a Redis that stops answering (SIGSTOP; real apiserver, Redis, agents; two replicas)', () => {
  let world: TestWorld;
  let ns: string;
  let replicas: ControlPlane[];
  let token: string;

  const frozen = new Freezer(() => world.redis.pid);
  const freeze = (): Promise<void> => frozen.freeze();
  const thaw = (): void => frozen.thaw();
  const claim = (url: string, claimRef: string) =>
    callClaims<{ id?: string; reason?: string; error?: string }>(url, 'POST', `/v1/namespaces/${ns}/claims`, token, {
      warmPool: 'python',
      claimRef,
      ttlSeconds: 600,
    });
  const urlOf = (replica: ControlPlane | undefined): string => replica?.claimsUrl ?? '';

  beforeAll(async () => {
    world = await testWorld({ name: 'cp-frozen', token: TOKEN, redis: true, fleet: { count: 2, capacity: 300 } });
    ns = await world.namespace('frozen');
    token = await serviceAccountToken(world.cluster, ns, 'frozen', ['create', 'get', 'update', 'delete']);
    await apply(world.cluster, template(ns, 'tpl', IMAGE), warmPool(ns, 'python', 'tpl', 20));
    replicas = await startClaimReplicas(world, {
      claims: {
        redis: { url: world.redis.url, timeoutMs: REDIS_TIMEOUT_MS },
        // A claimRef whose batch Redis cut short waits for the node it was sent to up to the cold timeout
        // before it is placed elsewhere; short here, so such a claimRef is served again within seconds.
        settings: { claimTimeoutMs: CLAIM_TIMEOUT_MS, coldNodeTimeoutMs: 5_000 },
      },
      warmKey: `${IMAGE}|none|small`,
      warmPerNode: 10,
    });
  });

  // Never leave Redis stopped: the next case, and the world's teardown, need it to answer.
  afterEach(thaw);

  afterAll(async () => {
    if (world !== undefined) thaw();
    await world?.close();
  });

  const readyToClaim = (): Promise<void> => everyReadyToClaim(replicas);

  it('answers a claim 503 within the Redis timeout while Redis is stopped, and serves it once after SIGCONT', async () => {
    const [first] = replicas;
    const before = await claim(urlOf(first), 'before');
    expect(before.status).toBe(200);

    await freeze();
    try {
      const started = performance.now();
      const stalled = await claim(urlOf(first), 'while-frozen');
      expect({ status: stalled.status, reason: stalled.body.reason }).toEqual({ status: 503, reason: 'Unavailable' });
      expect(stalled.body.error).toMatch(/Redis/);
      expect(stalled.headers.get('retry-after')).not.toBeNull();
      expect(performance.now() - started).toBeLessThan(BOUND_MS);
      // Asked again while Redis stays stopped: the stalled connections are being made anew (again and again), and
      // the claim is refused as promptly: at once ("not ready to claim: Redis … is not reachable") or after the
      // timeout, never after the claim timeout.
      const again = performance.now();
      const refused = await claim(urlOf(first), 'while-frozen');
      expect({ status: refused.status, reason: refused.body.reason }).toEqual({ status: 503, reason: 'Unavailable' });
      expect(refused.body.error).toMatch(/Redis/);
      expect(performance.now() - again).toBeLessThan(BOUND_MS);
    } finally {
      thaw();
    }

    // Served again once every connection is made anew (each backs off up to 1 s between attempts; meanwhile a
    // claim is answered 503 at once). The claim answered 503 may have been served once Redis read what it held:
    // asked again with its claimRef it gets that one sandbox, never a second.
    const after = await eventually(
      async () => {
        const answer = await claim(urlOf(first), 'while-frozen');
        if (answer.status !== 200) throw new Error(`${answer.status} ${JSON.stringify(answer.body)}`);
        return answer;
      },
      { what: 'the claim served again after SIGCONT', timeoutMs: 30_000, intervalMs: 200 },
    );
    const held = (await claimsOnNodes(world.fleet, TOKEN)).filter((c) => {
      const owner = parseNodeClaimRef(c.claimRef);
      return owner?.door === 'http' && owner.namespace === ns && owner.claimRef === 'while-frozen';
    });
    expect(held.map((c) => c.id)).toEqual([after.body.id]);
    for (const id of [before.body.id, after.body.id])
      expect((await callClaims(urlOf(first), 'DELETE', `/v1/namespaces/${ns}/claims/${id}`, token)).status).toBe(204);
  }, 120_000);

  it('turns an idle replica unready to claim while Redis is stopped, and ready again after SIGCONT', async () => {
    await readyToClaim();
    await freeze();
    try {
      // No claim asks: the replicas' heartbeat PING waits, and the Redis timeout drops its connection.
      const started = performance.now();
      await eventually(async () => (await Promise.all(replicas.map(claimsReady))).every((ready) => !ready), {
        what: 'every replica unready to claim while Redis is stopped',
        timeoutMs: BOUND_MS,
        intervalMs: 100,
      });
      expect(performance.now() - started).toBeLessThan(BOUND_MS);
    } finally {
      thaw();
    }
    await readyToClaim();
  }, 60_000);

  it('stops a replica process with SIGTERM within one Redis timeout while Redis is stopped, every part closed', async () => {
    const leaving = await startReplica(world.replicaOptions('default'), 'leaving', {
      claims: { redisUrl: world.redis.url },
      args: ['--redis-timeout', `${REDIS_TIMEOUT_MS}ms`],
      timeoutMs: 30_000,
    });
    await freeze();
    try {
      const started = performance.now();
      expect(await leaving.proc.stop('SIGTERM', 30_000)).toEqual({ code: 0, signal: null });
      expect(performance.now() - started).toBeLessThan(CLOSE_BOUND_MS);
      // Everything closed, rather than the --shutdown-timeout (20 s) giving up on the rest.
      expect(leaving.proc.logLines().map((line) => line['msg'])).toContain('shutdown complete');
    } finally {
      thaw();
    }
    await readyToClaim();
    const served = await claim(urlOf(replicas[0]), 'after-a-close');
    expect(served.status).toBe(200);
    const released = await callClaims(
      urlOf(replicas[0]),
      'DELETE',
      `/v1/namespaces/${ns}/claims/${served.body.id}`,
      token,
    );
    expect(released.status).toBe(204);
  }, 90_000);

  it('serves a burst of claimRefs exactly once each with Redis stopped for 4 s mid-burst', async () => {
    // Redis stops as the burst's attempt at its quarter is sent (SIGSTOP goes at once), so the freeze hits the claims
    // under way however fast the burst runs; the burst ends once the freeze is over.
    let attempts = 0;
    let startFreeze: (episode: Promise<void>) => void = () => undefined;
    const freezing = new Promise<void>((resolve) => (startFreeze = resolve));
    const freezeFor4s = async (): Promise<void> => {
      try {
        await freeze();
        await sleep(4_000);
      } finally {
        thaw();
      }
    };
    const burst: ClaimBurst = {
      // Asked once per attempt: counts them.
      urls: () => {
        if (++attempts === burst.claims / 4) startFreeze(freezeFor4s());
        return replicas.map(urlOf);
      },
      namespace: ns,
      token,
      warmPool: 'python',
      prefix: 'frozen-burst',
      claims: 200,
      inFlight: 16,
    };
    const answered = await claimBurst(burst, freezing);
    // The freeze hit claims under way: they were answered 5xx and asked again.
    expect(attempts).toBeGreaterThan(burst.claims);
    // Whatever a job queued before the freeze still had under way has settled by now.
    await sleep(3_000);
    expect(await burstOnNodes(world.fleet, TOKEN, burst, answered)).toEqual({
      duplicates: [],
      leaks: [],
      unanswered: [],
    });
    await readyToClaim();
    await releaseBurst(urlOf(replicas[0]), burst);
  }, 300_000);
});
