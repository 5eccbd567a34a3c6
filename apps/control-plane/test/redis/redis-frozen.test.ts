// A Redis that stops answering (SIGSTOP: its sockets stay open, the kernel
// even accepts new connections, nothing answers) must not hold the control
// plane's connections until TCP gives up: a command fails within the Redis
// timeout, the connection is made anew and serves again after SIGCONT, and no
// command runs twice. Blocking reads, which wait longer than that timeout on
// purpose, are not cut. Real redis-server; the claim pipeline's connections
// (pipelineConnections) and the federation hub's (Federation).
import { eventually, Freezer, sleep, startRedis, type TestRedis } from '@warmpool/harness';
import { silentLogger } from '@warmpool/runtime';
import { Queue, Worker } from 'bullmq';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Federation } from '../../src/federation/federation.js';
import { pipelineConnections, type PipelineConnections } from '../../src/provisioning/redis-connections.js';
import { BLOCK_SECONDS } from '../../src/provisioning/reply-channel.js';
import type { RedisSettings } from '../../src/redis/connection.js';

/** The Redis timeout of these cases: short, so a case waits little. */
const TIMEOUT_MS = 1_000;
/** What a bounded failure may take on a loaded CI machine: the timeout twice (a command queued behind one that times out), and slack. */
const BOUND_MS = 15_000;
/** What a healthy Redis may take to answer again after SIGCONT, reconnect included. */
const RECOVERY_MS = 30_000;

describe('a Redis that stops answering (SIGSTOP, real redis-server)', () => {
  let server: TestRedis;
  let settings: RedisSettings;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => {
    unhandled.push(reason);
  };
  const cleanups: Array<() => unknown> = [];

  const frozen = new Freezer(() => server.pid);
  const freeze = (): Promise<void> => frozen.freeze();
  const thaw = (): void => frozen.thaw();
  /** How long `promise` takes to settle, and how it settled. */
  const timed = async (promise: Promise<unknown>): Promise<{ ms: number; error: string | undefined }> => {
    const started = performance.now();
    const error = await promise.then(
      () => undefined,
      (err: unknown) => (err instanceof Error ? err.message : String(err)),
    );
    return { ms: performance.now() - started, error };
  };

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    server = await startRedis();
    settings = { url: server.url, timeoutMs: TIMEOUT_MS };
  });

  afterEach(async () => {
    thaw();
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  afterAll(async () => {
    thaw();
    await server?.stop();
    process.off('unhandledRejection', onUnhandled);
    expect(unhandled).toEqual([]);
  });

  /** The claim pipeline's connections, connected; closed after the case. */
  async function claimConnections(on = settings): Promise<PipelineConnections> {
    const connections = pipelineConnections(on, silentLogger);
    cleanups.push(() => {
      connections.redis.disconnect();
      connections.listener.disconnect();
    });
    await Promise.all([connections.redis.connect(), connections.listener.connect()]);
    return connections;
  }

  /** A BullMQ Queue and a Worker on the claim pipeline's connection options, noting the jobs served; closed after. */
  function queueAndWorker(
    name: string,
    queueConnection: PipelineConnections['queue'],
    workerConnection: PipelineConnections['worker'],
    drainDelay: number,
  ): { queue: Queue; worker: Worker; served: string[] } {
    const queue = new Queue(name, { connection: queueConnection, prefix: 'frozen' });
    const served: string[] = [];
    const worker = new Worker(
      name,
      async (job) => {
        served.push(job.id ?? '');
      },
      { connection: workerConnection, prefix: 'frozen', drainDelay },
    );
    cleanups.push(async () => {
      await worker.close(true);
      await queue.close();
    });
    return { queue, worker, served };
  }

  it('fails a claim-path command within the timeout, makes the connection anew, serves after SIGCONT, and runs no command twice', async () => {
    const { redis } = await claimConnections();
    const closes: number[] = [];
    redis.on('close', () => closes.push(performance.now()));
    await redis.set('frozen:count', 0);
    let sent = 0;
    const incr = (): Promise<number> => {
      sent++;
      return redis.incr('frozen:count');
    };

    await freeze();
    const first = await timed(incr());
    expect(first.error).toBe('Command timed out');
    expect(first.ms).toBeLessThan(BOUND_MS);
    // The connection that got no answer is dropped (and made anew, as often as it stalls again).
    await eventually(() => closes.length > 0 && redis.status !== 'ready', {
      what: 'the stalled connection dropped',
      timeoutMs: BOUND_MS,
    });
    // While it is being made anew a command fails at once (no offline queue) or after the timeout; never later.
    const meanwhile = await timed(incr());
    expect(meanwhile.error).toMatch(/Command timed out|Stream isn't writeable/);
    expect(meanwhile.ms).toBeLessThan(BOUND_MS);

    thaw();
    await eventually(async () => (await redis.ping()) === 'PONG', {
      what: 'the commands connection to answer again',
      timeoutMs: RECOVERY_MS,
    });
    expect(redis.status).toBe('ready');
    // Redis ran what reached it before it stopped (the first INCR sat in its socket buffer), but no command
    // was sent again on the new connection: each ran at most once.
    const ran = Number(await redis.get('frozen:count'));
    expect(ran).toBeLessThanOrEqual(sent);
    expect(await redis.incr('frozen:count')).toBe(ran + 1);
  }, 120_000);

  it('keeps a blocking read longer than the timeout whole: the reply listener’s BLPOP and BullMQ’s BZPOPMIN', async () => {
    const shortMs = 300;
    const short = { ...settings, timeoutMs: shortMs };
    const { listener, queue: queueConnection, worker: workerConnection } = await claimConnections(short);
    // The reply listener's BLPOP blocks BLOCK_SECONDS, over 3 × this timeout: it answers "nothing", it does not fail.
    const pop = await timed(listener.blpop('frozen:nothing', BLOCK_SECONDS));
    expect(pop.error).toBeUndefined();
    expect(pop.ms).toBeGreaterThanOrEqual(BLOCK_SECONDS * 1000 - 100);

    // drainDelay: an idle worker's BZPOPMIN blocks 3 s, 10 × this timeout.
    const { queue, worker, served } = queueAndWorker('frozen-block', queueConnection, workerConnection, 3);
    const errors: string[] = [];
    queue.on('error', (err: Error) => errors.push(err.message));
    worker.on('error', (err: Error) => errors.push(err.message));
    await worker.waitUntilReady();
    await sleep(7_000); // two blocks of an idle worker
    await queue.add('job', {}, { jobId: 'after-idle' });
    await eventually(() => served.includes('after-idle'), { what: 'the idle worker to take a job' });
    expect(errors).toEqual([]);
  }, 60_000);

  it('brings BullMQ’s worker and the reply listener back after SIGCONT', async () => {
    const { listener, queue: queueConnection, worker: workerConnection } = await claimConnections();
    const { queue, worker, served } = queueAndWorker('frozen-back', queueConnection, workerConnection, 1);
    queue.on('error', () => undefined);
    worker.on('error', () => undefined);
    await worker.waitUntilReady();
    await queue.add('job', {}, { jobId: 'before' });
    await eventually(() => served.includes('before'), { what: 'a job served before the freeze' });

    await freeze();
    // Adding a job (the dispatcher's call) fails within the timeout, not when TCP gives up.
    const add = await timed(queue.add('job', {}, { jobId: 'frozen' }));
    expect(add.error).toMatch(/Command timed out|Stream isn't writeable/);
    expect(add.ms).toBeLessThan(BOUND_MS);
    const pop = await timed(listener.blpop('frozen:replies', 1));
    expect(pop.error).toMatch(/Command timed out|Command aborted|Connection is closed/);
    expect(pop.ms).toBeLessThan(BOUND_MS + 1_000);
    await sleep(3 * TIMEOUT_MS); // the worker's connections stall and are made anew, more than once
    thaw();

    await eventually(
      async () => {
        await queue.add('job', {}, { jobId: 'after' });
        return true;
      },
      { what: 'the queue to take a job again', timeoutMs: RECOVERY_MS },
    );
    await eventually(() => served.includes('after'), {
      what: 'the worker that lived through the freeze to serve again',
      timeoutMs: RECOVERY_MS,
    });
    await eventually(
      async () => {
        await listener.lpush('frozen:replies', 'r');
        return (await listener.blpop('frozen:replies', 1).catch(() => null))?.[1] === 'r';
      },
      { what: 'the reply listener to pop again', timeoutMs: RECOVERY_MS },
    );
  }, 120_000);

  it('fails a federation report (the hub connection’s publish) within the timeout, and reports again after SIGCONT', async () => {
    const federation = new Federation({
      clusterId: 'east',
      intervalMs: 60_000,
      hub: { redis: settings, prefix: 'frozen:federation' },
      promRegistry: new Registry(),
      logger: silentLogger,
    });
    cleanups.push(() => federation.close());
    await federation.start();
    const reporter = federation.reporter;
    if (reporter === undefined) throw new Error('no reporter: the hub is configured');
    federation.setLocal([]);
    await reporter.report();

    await freeze();
    const report = await timed(reporter.report());
    expect(report.error).toMatch(/Command timed out|Stream isn't writeable/);
    expect(report.ms).toBeLessThan(BOUND_MS);
    thaw();

    await eventually(
      async () => {
        await reporter.report();
        return true;
      },
      {
        what: 'a report reaching the hub again',
        timeoutMs: RECOVERY_MS,
      },
    );
  }, 60_000);
});
