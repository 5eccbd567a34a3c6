// A PING on the claim pipeline's commands connection at a steady pace, so
// that a Redis that stops answering is noticed while no claim is asking:
// the PING waits, the connection's dead-peer timeout (redis/dead-peer.ts)
// drops the connection, and the claim API's readiness fails until Redis
// answers again. Without it an idle replica stays ready, and its next claim
// waits out the Redis timeout to learn what the PING would have told.
import type { Redis } from 'ioredis';

/** Paced at half the Redis timeout, at most this often: readiness follows a stopped Redis within 1.5 timeouts. */
const MIN_INTERVAL_MS = 500;
const MAX_INTERVAL_MS = 5_000;

export class RedisHeartbeat {
  readonly #redis: Redis;
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | undefined;

  constructor(redis: Redis, redisTimeoutMs: number) {
    this.#redis = redis;
    this.#intervalMs = Math.min(Math.max(redisTimeoutMs / 2, MIN_INTERVAL_MS), MAX_INTERVAL_MS);
  }

  start(): void {
    this.#timer ??= setInterval(() => this.#beat(), this.#intervalMs).unref();
  }

  close(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #beat(): void {
    // Only on a ready connection: one being made anew already says Redis is away, and fails a command at once.
    if (this.#redis.status !== 'ready') return;
    // Its failure is the connection's to act on (its dead-peer timeout); nothing waits for the answer.
    this.#redis.ping().catch(() => undefined);
  }
}
