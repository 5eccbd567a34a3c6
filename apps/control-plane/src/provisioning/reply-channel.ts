// How a batch's answer gets back to the replica whose callers wait for it:
// a reply list per replica in Redis (`<prefix>replies:<replica>`), each reply
// read once, by that replica; a job served by the replica's own worker is
// answered in-process. Why not BullMQ's QueueEvents nor pub/sub:
// docs/architecture.md, "Replies".
import { batchReplySchema, type BatchReply } from '@warmpool/api';
import type { Logger } from '@warmpool/runtime';
import type { Redis } from 'ioredis';
import { sleep } from '@warmpool/kube';

/** A reply list nobody reads (its replica is gone) goes after this long. */
const REPLY_LIST_TTL_MS = 60_000;
/** BLPOP's timeout: how long close() may wait for the listener at most (and the listener connection's block). */
export const BLOCK_SECONDS = 1;
/** Replies taken per round trip once one has arrived. */
const DRAIN_COUNT = 128;

export interface ReplyChannelOptions {
  replica: string;
  /** Commands (LPUSH). */
  redis: Redis;
  /** A connection of its own for the blocking reads; closed by close(). */
  listener: Redis;
  prefix: string;
  /** Each reply for this replica, once. */
  onReply(reply: BatchReply): void;
  logger: Logger;
}

export class ReplyChannel {
  readonly #options: ReplyChannelOptions;
  readonly #key: string;
  #closed = false;
  #loop: Promise<void> | undefined;

  constructor(options: ReplyChannelOptions) {
    this.#options = options;
    this.#key = this.listKey(options.replica);
  }

  listKey(replica: string): string {
    return `${this.#options.prefix}replies:${replica}`;
  }

  start(): void {
    this.#loop ??= this.#listen();
  }

  /** Delivers a job's reply to the replica that waits for it. */
  async send(replyTo: string, reply: BatchReply): Promise<void> {
    if (replyTo === this.#options.replica) {
      this.#options.onReply(reply);
      return;
    }
    const key = this.listKey(replyTo);
    await this.#options.redis.multi().lpush(key, JSON.stringify(reply)).pexpire(key, REPLY_LIST_TTL_MS).exec();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#options.listener.disconnect();
    await this.#loop;
  }

  async #listen(): Promise<void> {
    const { listener, logger } = this.#options;
    while (!this.#closed) {
      try {
        const popped = await listener.blpop(this.#key, BLOCK_SECONDS);
        if (popped === null) continue;
        this.#deliver(popped[1]);
        for (;;) {
          const more = await listener.lpop(this.#key, DRAIN_COUNT);
          if (more === null || more.length === 0) break;
          for (const raw of more) this.#deliver(raw);
          if (more.length < DRAIN_COUNT) break;
        }
      } catch (err) {
        if (this.#closed) return;
        logger.warn('reading the reply list failed; retrying', { err });
        await sleep(250);
      }
    }
  }

  #deliver(raw: string): void {
    let reply: BatchReply;
    try {
      reply = batchReplySchema.parse(JSON.parse(raw));
    } catch (err) {
      this.#options.logger.error('dropping an unreadable batch reply', { err });
      return;
    }
    this.#options.onReply(reply);
  }
}
