// A leader stopped with SIGTERM while the apiserver and Redis both stop
// answering (SIGSTOP: connections stay open, nothing answers). Its Lease
// release waits up to --renew-deadline and its claim pipeline up to
// --redis-timeout (plus a second); the two run side by side, so the close
// fits a --shutdown-timeout below their sum and every part is closed, rather
// than the deadline giving up on what was still closing. Real apiserver and
// Redis; the replica is a process (dist/main.js).
import { eventually, Freezer } from '@warmpool/harness';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readiness, startReplica } from '../support/replicas.js';
import { testWorld, type TestWorld } from '../support/world.js';

const TOKEN = 'fleet-token-for-frozen-peers-tests';
/** The release gives up at the renew deadline: 4 s. */
const LEASE = { duration: 6_000, renewDeadline: 4_000, retryPeriod: 500 };
const REDIS_TIMEOUT = '4s';
/** Below the release and the Redis close one after the other (over 8 s), above the longer of the two (≈ 5 s). */
const SHUTDOWN_TIMEOUT = '7s';

describe('a leader stopped with SIGTERM while the apiserver and Redis are stopped (a process)', () => {
  let world: TestWorld;
  const apiserver = new Freezer(() => {
    const pid = world.cluster.pids().apiserver;
    if (pid === undefined) throw new Error('the apiserver is not running');
    return pid;
  });
  const redis = new Freezer(() => world.redis.pid);

  beforeAll(async () => {
    world = await testWorld({ name: 'cp-frozen-peers', token: TOKEN, redis: true });
  });

  // Never leave either stopped: the world's teardown needs both to answer.
  afterEach(() => {
    apiserver.thaw();
    redis.thaw();
  });

  afterAll(() => world?.close());

  it('releases the Lease beside the other closes, and exits 0 with every part closed', async () => {
    const system = await world.namespace('frozen-peers');
    const leader = await startReplica(world.replicaOptions(system, { lease: LEASE }), 'leaving', {
      claims: { redisUrl: world.redis.url },
      args: ['--redis-timeout', REDIS_TIMEOUT, '--shutdown-timeout', SHUTDOWN_TIMEOUT],
      timeoutMs: 30_000,
    });
    await eventually(async () => (await readiness(leader)).leader, { what: 'the replica to lead', timeoutMs: 30_000 });

    await apiserver.freeze();
    await redis.freeze();
    expect(await leader.proc.stop('SIGTERM', 30_000)).toEqual({ code: 0, signal: null });
    const said = leader.proc.logLines().map((line) => line['msg']);
    // The release was tried and gave up at the renew deadline; everything else closed meanwhile.
    expect(said).toContain('failed to release lease');
    expect(said).toContain('shutdown complete');
    expect(said).not.toContain('shutdown deadline passed; not waiting for the rest');
  }, 90_000);
});
