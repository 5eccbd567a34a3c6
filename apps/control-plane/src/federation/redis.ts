// Connections to the federation hub. Commands fail at once while Redis is
// away (nothing queues behind a reconnect: the next report or read simply
// tries again), and reconnects back off up to a few seconds. A hub that stops
// answering fails each command after the hub's timeout and has its
// connection made anew (redis/dead-peer.ts); the subscriber, which waits for
// nothing once subscribed, is probed by TCP keepalive after that timeout.
import type { Redis } from 'ioredis';
import { connect, type RedisSettings } from '../redis/connection.js';

export function reconnectDelay(times: number): number {
  return Math.min(100 * 2 ** Math.min(times, 6), 5_000);
}

export function hubConnection(hub: RedisSettings, options: { subscriber?: boolean } = {}): Redis {
  return connect(hub, {
    lazyConnect: true,
    retryStrategy: reconnectDelay,
    ...(options.subscriber === true
      ? { maxRetriesPerRequest: null }
      : { enableOfflineQueue: false, maxRetriesPerRequest: 1 }),
  });
}

/**
 * Logs the first failure of a run of failures and the recovery after it, so a
 * hub that is down is said once, not at every tick.
 */
export class OnceLogger {
  #failing = false;

  failed(log: () => void): void {
    if (this.#failing) return;
    this.#failing = true;
    log();
  }

  succeeded(log: () => void): void {
    if (!this.#failing) return;
    this.#failing = false;
    log();
  }

  get failing(): boolean {
    return this.#failing;
  }
}
