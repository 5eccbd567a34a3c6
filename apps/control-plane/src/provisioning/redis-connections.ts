// The provisioning pipeline's Redis connections and the eviction-policy check.
// The commands connection fails at once while Redis is away (claims answer
// 503) rather than queueing behind a reconnect, and auto-pipelines (the index
// commands a batch issues in one turn go out in one write); the reply
// listener blocks on a connection of its own; BullMQ makes its own from the
// same settings: the Queue's, like the commands connection, fails at once
// while Redis is away; the Worker's queue while it is away (BullMQ retries).
// Every command of these fails after the Redis timeout, a blocking one after
// its block plus that timeout (redis/dead-peer.ts), and a connection that
// waits longer is made anew.
import type { Logger } from '@warmpool/runtime';
import type { ConnectionOptions as BullConnectionOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { blockingOptions, bullConnection, connect, describeRedis, type RedisSettings } from '../redis/connection.js';
import { BULLMQ_MAX_BLOCK_MS } from '../redis/dead-peer.js';
import { BLOCK_SECONDS } from './reply-channel.js';

export interface PipelineConnections {
  redis: Redis;
  listener: Redis;
  /** BullMQ's Queue's `connection`. */
  queue: BullConnectionOptions;
  /** BullMQ's Worker's `connection` (its blocking connection for BZPOPMIN is made from the same options). */
  worker: BullConnectionOptions;
}

export function pipelineConnections(settings: RedisSettings, logger: Logger): PipelineConnections {
  const redis = connect(settings, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    retryStrategy: reconnectDelay,
    lazyConnect: true,
    enableAutoPipelining: true,
  });
  const listener = connect(settings, {
    maxRetriesPerRequest: null,
    retryStrategy: reconnectDelay,
    lazyConnect: true,
    ...blockingOptions(settings, BLOCK_SECONDS * 1000),
  });
  for (const [name, connection] of [
    ['commands', redis],
    ['replies', listener],
  ] as const) {
    connection.on('error', (err: Error) =>
      logger.debug('redis connection error', { connection: name, err: err.message }),
    );
  }
  const bull = { maxRetriesPerRequest: null, retryStrategy: reconnectDelay };
  return {
    redis,
    listener,
    queue: bullConnection(settings, { ...bull, enableOfflineQueue: false }),
    worker: bullConnection(settings, { ...bull, ...blockingOptions(settings, BULLMQ_MAX_BLOCK_MS) }),
  };
}

export function warnUnlessNoEviction(redis: Redis, settings: RedisSettings, logger: Logger): void {
  checkEvictionPolicy(redis).then(
    (problem) => {
      if (problem !== undefined)
        logger.error(
          `Redis eviction policy: ${problem}. BullMQ loses jobs when Redis evicts keys; set maxmemory-policy noeviction`,
          { redis: describeRedis(settings) },
        );
    },
    (err: unknown) => logger.warn("could not read Redis's maxmemory-policy (it must be noeviction)", { err }),
  );
}

/** Why Redis's eviction policy loses jobs, or undefined when it is noeviction. */
export async function checkEvictionPolicy(redis: Redis): Promise<string | undefined> {
  const answer = (await redis.config('GET', 'maxmemory-policy')) as string[];
  const policy = answer[1];
  return policy === 'noeviction' ? undefined : `maxmemory-policy is ${policy ?? '(unknown)'}, not noeviction`;
}

function reconnectDelay(times: number): number {
  return Math.min(50 * 2 ** Math.min(times, 5), 1_000);
}
