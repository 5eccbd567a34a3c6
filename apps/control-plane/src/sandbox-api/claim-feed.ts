// The claim index's event stream → the Sandbox view, so a claim shows in list
// and watch before its node publishes it. At start the stream is replayed
// (it keeps the last few minutes); then it is followed with a blocking XREAD
// on a connection of its own. After a Redis outage it goes on from where it
// stopped; events trimmed away meanwhile are covered by the nodes' next
// publish.
import { claimEventSchema, type ClaimEvent } from '@warmpool/api';
import { messageOf } from '@warmpool/runtime';
import type { Logger } from '@warmpool/runtime';
import type { Redis } from 'ioredis';
import { blockingOptions, connect, type RedisSettings } from '../redis/connection.js';
import type { SandboxView } from './view.js';

export interface ClaimFeedOptions {
  /** The claim pipeline's Redis. */
  redis: RedisSettings;
  /** The stream's key (the claim index's eventsKey). */
  key: string;
  view: SandboxView;
  logger: Logger;
  /** How long one XREAD blocks (default 5 s). */
  blockMs?: number;
}

const PAGE = 1_000;
const DEFAULT_BLOCK_MS = 5_000;

export class ClaimFeed {
  readonly #options: ClaimFeedOptions;
  readonly #redis: Redis;
  #cursor = '0-0';
  #replayed = false;
  #closed = false;
  #loop: Promise<void> | undefined;
  #failing: string | undefined;

  constructor(options: ClaimFeedOptions) {
    this.#options = options;
    this.#redis = connect(options.redis, {
      maxRetriesPerRequest: null,
      lazyConnect: true,
      retryStrategy: (times) => Math.min(200 * times, 2_000),
      ...blockingOptions(options.redis, options.blockMs ?? DEFAULT_BLOCK_MS),
    });
    this.#redis.on('error', (err: Error) => options.logger.debug('claim feed connection error', { err: err.message }));
  }

  /** Whether the stream has been read up to its end once. */
  get replayed(): boolean {
    return this.#replayed;
  }

  /** Why the feed is behind, while it is. */
  get failing(): string | undefined {
    return this.#failing;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#redis.disconnect();
    await this.#loop;
  }

  async #run(): Promise<void> {
    const { logger, key } = this.#options;
    while (!this.#closed) {
      try {
        if (this.#redis.status === 'wait') await this.#redis.connect();
        if (!this.#replayed) {
          for (;;) {
            const page = (await this.#redis.xrange(
              key,
              this.#cursor === '0-0' ? '-' : `(${this.#cursor}`,
              '+',
              'COUNT',
              PAGE,
            )) as Array<[string, string[]]>;
            this.#apply(page);
            if (page.length < PAGE) break;
          }
          this.#replayed = true;
          logger.info('claim events replayed', { cursor: this.#cursor });
        }
        const answer = (await this.#redis.xread(
          'COUNT',
          PAGE,
          'BLOCK',
          this.#options.blockMs ?? DEFAULT_BLOCK_MS,
          'STREAMS',
          key,
          this.#cursor,
        )) as Array<[string, Array<[string, string[]]>]> | null;
        for (const [, entries] of answer ?? []) this.#apply(entries);
        if (this.#failing !== undefined) logger.info('claim feed recovered');
        this.#failing = undefined;
      } catch (err) {
        if (this.#closed) return;
        if (this.#failing === undefined)
          logger.warn('claim feed cannot read the claim events; retrying (claims show when their nodes publish)', {
            err,
          });
        this.#failing = messageOf(err);
        await new Promise((resolve) => setTimeout(resolve, 1_000).unref());
      }
    }
  }

  #apply(entries: Array<[string, string[]]>): void {
    for (const [id, fields] of entries) {
      this.#cursor = id;
      const atMs = Number(id.split('-')[0]);
      const event = parseEvent(fields);
      if (event === undefined) {
        this.#options.logger.warn('skipping an unreadable claim event', { id });
        continue;
      }
      if (event.op === 'claimed') {
        const { record } = event;
        this.#options.view.applyClaimed(
          {
            namespace: record.namespace,
            name: record.claimRef,
            id: record.id,
            node: record.node,
            deadline: record.deadline,
            ownerAddr: record.ownerAddr,
            tier: record.tier,
            ...(record.warmPool !== '' ? { pool: record.warmPool } : {}),
            ...(record.key !== undefined ? { key: record.key } : {}),
            ...(record.cluster !== undefined ? { cluster: record.cluster } : {}),
          },
          atMs,
        );
      } else {
        this.#options.view.applyReleased(event.namespace, event.claimRef, event.id, atMs);
      }
    }
  }
}

function parseEvent(fields: string[]): ClaimEvent | undefined {
  let text: string | undefined;
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === 'e') text = fields[i + 1];
  if (text === undefined) return undefined;
  try {
    const parsed = claimEventSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
