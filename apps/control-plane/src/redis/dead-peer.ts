// Dead-peer detection for every Redis connection of the control plane. A
// Redis that stops answering without closing its sockets (SIGSTOP, a VM
// paused, a network partition) holds a waiting command until TCP gives up,
// minutes later; these options bound that wait by the Redis timeout T:
//
// - every command fails "Command timed out" after T (commandTimeout);
// - a connection that has been waiting T for any data is destroyed
//   (socketTimeout), so it is made anew by the client's retryStrategy and
//   serves again as soon as Redis answers; a reconnect whose handshake
//   stalls (the kernel accepts TCP for a stopped Redis) is cut the same way;
// - a command is sent at most once: one in flight on a dropped connection
//   fails instead of being resent on the next (autoResendUnfulfilledCommands
//   off). Redis may still run it (it sits in the old socket's buffer), which
//   is why a resend could run it twice;
// - the TCP connect and TLS handshake, and each question to a Sentinel, are
//   bounded by T too; TCP keepalive probes an idle connection after T
//   (a partitioned subscriber, which waits for nothing, is noticed then);
// - a disconnect waits DISCONNECT_WAIT_MS for Redis to close its end, then
//   destroys the socket: a running Redis closes at once, a stopped one never
//   does, and ioredis's own 2 s wait made every cut connection hold a
//   shutdown that long.
//
// A blocking command (BLPOP, XREAD BLOCK, BullMQ's BZPOPMIN) waits for its
// block on purpose: its connection's bounds are T plus the longest block
// (blockingFor), so no block is cut and a dead peer is still noticed.
import type { RedisOptions } from 'ioredis';

/** T when no other is set: above Redis's own 5 s busy-script threshold, equal to the default claim timeout. */
export const DEFAULT_REDIS_TIMEOUT_MS = 10_000;

/** The longest a BullMQ Worker's BZPOPMIN blocks (BullMQ caps its block at 10 s). */
export const BULLMQ_MAX_BLOCK_MS = 10_000;

/** How long a disconnect waits for Redis to close its end of the socket before the socket is destroyed. */
export const DISCONNECT_WAIT_MS = 200;

/** The options that bound every wait of a connection whose commands never block. */
export function deadPeerOptions(timeoutMs: number): RedisOptions {
  return {
    commandTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    connectTimeout: timeoutMs,
    sentinelCommandTimeout: timeoutMs,
    keepAlive: timeoutMs,
    disconnectTimeout: DISCONNECT_WAIT_MS,
    autoResendUnfulfilledCommands: false,
  };
}

/** The bounds of a connection whose longest blocking command blocks `maxBlockMs`: its block plus T. */
export function blockingFor(timeoutMs: number, maxBlockMs: number): RedisOptions {
  return { commandTimeout: timeoutMs + maxBlockMs, socketTimeout: timeoutMs + maxBlockMs };
}
