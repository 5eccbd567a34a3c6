// The control plane's Redis clients through Redis Sentinel (real
// redis-server and redis-sentinel processes, passwords on both): they find
// the primary by name, and after the primary is killed they find the
// promoted replica by themselves: commands work again, a blocking listener
// receives again, and a BullMQ Queue and Worker serve jobs again: the
// claim pipeline's four kinds of connection.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, startSentinelTopology, type TestSentinelTopology } from '@warmpool/harness';
import { parseHostPort } from '@warmpool/runtime';
import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bullConnection, connect as connectRedis, type RedisSettings } from '../../src/redis/connection.js';

const PASSWORD = 'data-node-secret';
const SENTINEL_PASSWORD = 'sentinel-secret';
const QUEUE = 'sentinel-spec';
const quickRetry = (times: number): number => Math.min(50 * times, 500);

describe('Redis through Sentinel (primary, replica, three Sentinels; the primary killed)', () => {
  let topology: TestSentinelTopology;
  let dir: string;
  let settings: RedisSettings;
  let commands: Redis;
  let listener: Redis;
  let queue: Queue;
  let worker: Worker;
  const served: string[] = [];

  beforeAll(async () => {
    topology = await startSentinelTopology({ password: PASSWORD, sentinelPassword: SENTINEL_PASSWORD });
    dir = mkdtempSync(join(tmpdir(), 'warmpool-sentinel-spec-'));
    writeFileSync(join(dir, 'password'), `${PASSWORD}\n`);
    writeFileSync(join(dir, 'sentinel-password'), `${SENTINEL_PASSWORD}\n`);
    settings = {
      // Never dialed: the Sentinels name the primary.
      url: 'redis://primary.invalid/0',
      passwordFile: join(dir, 'password'),
      sentinel: {
        hosts: topology.sentinels.map(parseHostPort),
        masterName: topology.masterName,
        passwordFile: join(dir, 'sentinel-password'),
      },
    };
    // As the claim pipeline's commands connection: no offline queue, one retry, quick reconnects.
    commands = connectRedis(settings, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      retryStrategy: quickRetry,
    });
    commands.on('error', () => undefined);
    await commands.connect();
    // As the reply listener: blocking pops, commands wait through a reconnect.
    listener = connectRedis(settings, { lazyConnect: true, maxRetriesPerRequest: null, retryStrategy: quickRetry });
    listener.on('error', () => undefined);
    await listener.connect();
    queue = new Queue(QUEUE, {
      connection: bullConnection(settings, { enableOfflineQueue: false, retryStrategy: quickRetry }),
    });
    queue.on('error', () => undefined);
    worker = new Worker(
      QUEUE,
      async (job: Job<{ n: number }>) => {
        served.push(job.id ?? '');
        return job.data.n;
      },
      {
        connection: bullConnection(settings, { maxRetriesPerRequest: null, retryStrategy: quickRetry }),
        drainDelay: 1,
      },
    );
    worker.on('error', () => undefined);
  });

  afterAll(async () => {
    for (const step of [
      () => worker?.close(true),
      () => queue?.close(),
      async () => commands?.disconnect(),
      async () => listener?.disconnect(),
      () => topology?.close(),
      async () => rmSync(dir, { recursive: true, force: true }),
    ]) {
      await Promise.resolve()
        .then(step)
        .catch(() => undefined);
    }
  });

  /** A reply pushed through the commands connection reaches a blocking pop on the listener. */
  const replyDelivered = async (reply: string): Promise<void> => {
    const popped = listener.blpop('replies:spec', 5);
    await eventually(
      async () => {
        await commands.rpush('replies:spec', reply);
        return true;
      },
      {
        timeoutMs: 30_000,
        intervalMs: 200,
        what: `an RPUSH of ${reply} through the commands connection`,
      },
    );
    expect(await popped).toEqual(['replies:spec', reply]);
  };

  const servedJob = async (id: string): Promise<void> => {
    await eventually(
      async () => {
        // The add itself may fail while the clients are still finding the new primary: try again.
        if (!(await queue.getJob(id))) await queue.add('claim-batch', { n: 1 }, { jobId: id });
        return served.includes(id);
      },
      { timeoutMs: 30_000, intervalMs: 200, what: `job ${id} served by the worker` },
    );
  };

  it('reaches the primary the Sentinels name, logging in with the password files', async () => {
    const primary = await topology.primaryAddress();
    expect(await commands.set('claim:1', 'node-a')).toBe('OK');
    expect(await commands.config('GET', 'port')).toEqual(['port', String(primary.port)]);
    await servedJob('before-failover');
    await replyDelivered('before-failover');
  });

  it('after the primary is killed, reaches the promoted replica: commands, a blocking listener and BullMQ jobs work again, the data replicated before is there', async () => {
    // Replicated before the crash: the promoted replica must have it.
    expect(await commands.call('WAIT', '1', '5000')).toBe(1);
    const killed = await topology.killPrimary();
    const promoted = await topology.waitForFailover();
    expect(promoted.port).not.toBe(killed.port);

    const value = await eventually(() => commands.get('claim:1').catch(() => undefined), {
      timeoutMs: 30_000,
      intervalMs: 200,
      what: 'a GET through the commands connection after the failover',
    });
    expect(value).toBe('node-a');
    expect(await commands.config('GET', 'port')).toEqual(['port', String(promoted.port)]);
    expect(await commands.set('claim:2', 'node-b')).toBe('OK');
    await servedJob('after-failover');
    await replyDelivered('after-failover');
    // Longer than the waits above together, so a failure names the step that did not happen.
  }, 180_000);
});
