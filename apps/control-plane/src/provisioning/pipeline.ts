// The provisioning pipeline, the ClaimService behind every front door, split
// at the queue as BullMQ splits Queue and Worker: ProvisionerRegistry →
// Provisioner per driven pool → ClaimDispatcher (one BullMQ job per batch,
// callers waiting on this replica) → a ClaimWorker in ANY replica
// (BatchClaimer: placement, node agents, exactly once) → the reply on the
// waiting replica's list (ReplyChannel) → each caller gets its claim. Get,
// renew and release go through the ClaimDirectory (the index, else the nodes).
//
// Every replica runs all of it; nothing here is leader-only, nothing here
// writes to the apiserver. Redis key spaces (each has one owner):
//   <prefix>:index:*    the claim index (ClaimIndex)
//   <prefix>:replies:*  the reply lists (ReplyChannel)
//   <prefix>:bull:*     the claim queue (BullMQ)
import type { BatchJob, NodeInventory, SandboxTemplate, SandboxWarmPool } from '@warmpool/api';
import type { Informer } from '@warmpool/kube';
import { closeInOrder, messageOf, type Clock, type Logger } from '@warmpool/runtime';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Registry } from 'prom-client';
import { AgentClient } from '../agents/client.js';
import type { Runnable } from '../manager/runnable.js';
import { vouchedAgents, type AddressCheck, type AgentAddress } from '../nodes/addresses.js';
import type { NodeView } from '../nodes/tracker.js';
import { describeRedis, redisTimeoutMs, type RedisSettings } from '../redis/connection.js';
import type { TokenSource } from '../agents/token.js';
import { batchWorker } from './batch-workers.js';
import { answerUntilGivenUp, type CallerGone } from './caller-signal.js';
import { ClaimDirectory } from './claim-directory.js';
import { ClaimIndex } from './claim-index.js';
import { scopeOf } from './claim-index-values.js';
import {
  ClaimFailure,
  type ClaimCallOptions,
  type ClaimGrant,
  type ClaimOrder,
  type ClaimScope,
  type ClaimService,
  type LookupOptions,
  type ServedGrant,
} from './claim-service.js';
import type { ClaimWorker } from './claim-worker.js';
import { ClaimDispatcher } from './dispatcher.js';
import { ProvisioningMetrics } from './metrics.js';
import { nodeOwnerAddrs } from './node-owner-addrs.js';
import { provisioningSettings, type ProvisioningSettings } from './options.js';
import { ProvisionerRegistry } from './provisioners.js';
import { pipelineConnections, warnUnlessNoEviction } from './redis-connections.js';
import { RedisClose } from './redis-close.js';
import { RedisHeartbeat } from './redis-heartbeat.js';
import { ReplyChannel } from './reply-channel.js';
import { watchProvisioners } from './watch.js';

export { checkEvictionPolicy } from './redis-connections.js';

export const QUEUE_NAME = 'claims';
export const DEFAULT_PREFIX = 'warmpool';

export interface ProvisioningOptions extends Partial<ProvisioningSettings> {
  /** How to reach Redis (URL, password and CA files, Sentinel): every connection here is made from it. */
  redis: RedisSettings;
  /** This replica; its reply list and job ids carry it. */
  replica: string;
  /** Key prefix of the queue, index and reply lists (default `warmpool`). */
  prefix?: string;
  pools: Informer<SandboxWarmPool>;
  templates: Informer<SandboxTemplate>;
  inventories: Informer<NodeInventory>;
  /** The warm-pool driver's node views (fresher counts on the leader; empty elsewhere). */
  driverViews: () => readonly NodeView[];
  /** The driver's address check: inventories are used only at addresses their Node vouches for. */
  addresses: () => AddressCheck;
  staleAfterMs: number;
  token: TokenSource;
  registry: Registry;
  /** Told of every served claim (after the metrics), e.g. the pool autoscaler's claim counts. Must not throw. */
  onServed?: (order: ClaimOrder, grant: ServedGrant) => void;
  clock: Clock;
  logger: Logger;
}

/** A runnable in every replica: each replica's workers serve batches, whoever leads. */
export interface ProvisioningPipeline extends ClaimService, Runnable {
  readonly provisioners: ProvisionerRegistry;
  /** The shared claim index (the Env claim router records spilled claims in it; the janitor repairs it). */
  readonly index: ClaimIndex;
  /** Where live claims are: the index, else the nodes. */
  readonly directory: ClaimDirectory;
  readonly settings: Readonly<ProvisioningSettings>;
  /** The claim index's event stream (claimed, renewed, released), which the Sandbox API follows. */
  readonly claimEventsKey: string;
  /** Checks Redis's eviction policy, starts the worker and the reply listener. */
  start(): Promise<void>;
}

export function createProvisioning(options: ProvisioningOptions): ProvisioningPipeline {
  return new ClaimPipeline(options);
}

class ClaimPipeline implements ProvisioningPipeline {
  readonly name = 'claim pipeline';
  readonly needsLeader = false;
  readonly provisioners: ProvisionerRegistry;
  readonly index: ClaimIndex;
  readonly directory: ClaimDirectory;
  readonly settings: ProvisioningSettings;
  readonly claimEventsKey: string;
  readonly #options: ProvisioningOptions;
  readonly #replica: string;
  readonly #redis: Redis;
  readonly #listener: Redis;
  readonly #queue: Queue<BatchJob>;
  readonly #agents: AgentClient;
  readonly #metrics: ProvisioningMetrics;
  readonly #dispatcher: ClaimDispatcher;
  readonly #replies: ReplyChannel;
  readonly #worker: ClaimWorker;
  readonly #heartbeat: RedisHeartbeat;
  readonly #stopping = new AbortController();

  constructor(options: ProvisioningOptions) {
    this.#options = options;
    const { logger } = options;
    this.settings = provisioningSettings(options);
    this.#replica = options.replica.replaceAll(':', '_');
    const prefix = options.prefix ?? DEFAULT_PREFIX;
    const connections = pipelineConnections(options.redis, logger);
    const { redis, listener } = connections;
    this.#redis = redis;
    this.#listener = listener;
    this.#heartbeat = new RedisHeartbeat(redis, redisTimeoutMs(options.redis));
    const bullPrefix = `${prefix}:bull`;
    const queue = new Queue<BatchJob>(QUEUE_NAME, {
      connection: connections.queue,
      prefix: bullPrefix,
    });
    queue.on('error', (err: Error) => logger.debug('claim queue connection error', { err: err.message }));
    this.#queue = queue;
    this.index = new ClaimIndex(redis, { prefix: `${prefix}:index:` });
    this.claimEventsKey = this.index.eventsKey;
    this.#agents = new AgentClient({ token: options.token, timeoutMs: this.settings.nodeTimeoutMs, logger });
    const nodes = (): AgentAddress[] => vouchedAgents(options.inventories.lister, options.addresses());
    const ownerAddrOf = nodeOwnerAddrs(options.inventories.lister);
    this.directory = new ClaimDirectory({ index: this.index, agents: this.#agents, nodes, ownerAddrOf, logger });
    const index = this.index;
    this.#metrics = new ProvisioningMetrics(options.registry, {
      async jobCounts() {
        const counts = await queue.getJobCounts('waiting', 'active');
        return { waiting: counts.waiting ?? 0, active: counts.active ?? 0 };
      },
      async recovering() {
        return (await index.recovering()) !== undefined;
      },
    });
    this.#dispatcher = new ClaimDispatcher({
      queue,
      replica: this.#replica,
      claimTimeoutMs: this.settings.claimTimeoutMs,
      metrics: this.#metrics,
      releaseUnanswered: (grant, why) => this.#releaseUnanswered(grant, why),
      logger,
    });
    this.#replies = new ReplyChannel({
      replica: this.#replica,
      redis,
      listener,
      prefix: `${prefix}:`,
      onReply: this.#dispatcher.onReply,
      logger,
    });
    this.#worker = batchWorker({
      queue,
      queueName: QUEUE_NAME,
      prefix: bullPrefix,
      connection: connections.worker,
      index: this.index,
      agents: this.#agents,
      replies: this.#replies,
      inventories: options.inventories,
      snapshots: options,
      nodes,
      ownerAddrOf,
      settings: this.settings,
      metrics: this.#metrics,
      logger,
    });
    this.provisioners = new ProvisionerRegistry({
      pools: options.pools.lister,
      templates: options.templates.lister,
      dispatch: this.#dispatcher.dispatch,
      batcher: this.settings.batcher,
      rejoinMs: this.settings.batchRejoinMs,
      logger: logger.child({ component: 'provisioners' }),
    });
    watchProvisioners(this.provisioners, options.pools, options.templates);
  }

  notReadyReasons(): string[] {
    const reasons: string[] = [];
    if (this.#redis.status !== 'ready')
      reasons.push(`Redis (--redis-url) is not reachable (connection ${this.#redis.status})`);
    for (const informer of [this.#options.pools, this.#options.templates, this.#options.inventories]) {
      if (!informer.hasSynced()) reasons.push(`${informer.type.kind} cache not synced yet`);
    }
    return reasons;
  }

  async start(): Promise<void> {
    const { logger } = this.#options;
    const redis = this.#redis;
    // Checked on the first connection (now, or whenever Redis first answers).
    redis.once('ready', () => warnUnlessNoEviction(redis, this.#options.redis, logger));
    await redis
      .connect()
      .catch((err: unknown) =>
        logger.error('Redis (--redis-url) is not reachable: claims answer 503 until it is', { err }),
      );
    void this.#listener.connect().catch(() => undefined);
    this.#heartbeat.start();
    this.#replies.start();
    // A worker places claims from the inventory cache: it takes jobs only once that cache is filled.
    void this.#options.inventories.waitForSync(this.#stopping.signal).then(
      () => this.#worker.start(),
      () => undefined,
    );
    this.provisioners.sync();
    logger.info('provisioning started', {
      replica: this.#replica,
      redis: describeRedis(this.#options.redis),
      ...this.settings,
    });
  }

  async claim(order: ClaimOrder, callOptions: ClaimCallOptions = {}): Promise<ServedGrant> {
    const started = performance.now();
    try {
      const grant = await this.#submit(order, callOptions.givenUp);
      this.#metrics.served(order.owner.door, grant.tier, (performance.now() - started) / 1000);
      this.#options.onServed?.(order, grant);
      return grant;
    } catch (err) {
      const failure =
        err instanceof ClaimFailure ? err : new ClaimFailure('Unavailable', messageOf(err), { cause: err });
      this.#metrics.failed(order.owner.door, failure.reason);
      throw failure;
    }
  }

  lookup(scope: ClaimScope, id: string, lookupOptions?: LookupOptions): ReturnType<ClaimService['lookup']> {
    return this.directory.lookup(scope, id, lookupOptions);
  }

  renew(scope: ClaimScope, id: string, ttlSeconds: number): ReturnType<ClaimService['renew']> {
    return this.directory.renew(scope, id, ttlSeconds);
  }

  release(scope: ClaimScope, id: string): ReturnType<ClaimService['release']> {
    return this.directory.release(scope, id);
  }

  async close(): Promise<void> {
    this.#stopping.abort();
    const redis = new RedisClose({
      timeoutMs: redisTimeoutMs(this.#options.redis),
      answering: () => this.#redis.status === 'ready',
      logger: this.#options.logger,
    });
    await closeInOrder(
      'the provisioning pipeline',
      [
        ['heartbeat', () => this.#heartbeat.close()],
        ['provisioners', () => this.provisioners.close()],
        ['worker', () => this.#worker.close(redis)],
        ['queue', () => redis.closeOrCut('the claim queue', this.#queue.close(), () => this.#queue.disconnect())],
        ['replies', () => this.#replies.close()],
        ['agents', () => this.#agents.close()],
        ['index', () => this.index.close()],
        ['redis', () => this.#redis.disconnect()],
      ],
      this.#options.logger,
    );
    this.#dispatcher.close();
  }

  /** Adds the order to its pool's batch; a caller who gives up is answered Timeout at once. */
  #submit(order: ClaimOrder, caller: CallerGone | undefined): Promise<ServedGrant> {
    const reasons = this.notReadyReasons();
    if (reasons.length > 0)
      return Promise.reject(
        new ClaimFailure('Unavailable', `not ready to claim: ${reasons.join('; ')}`, { retryAfterSeconds: 1 }),
      );
    const provisioner = this.provisioners.get(order.namespace, order.warmPool);
    if (provisioner === undefined || !provisioner.accepting)
      return Promise.reject(this.provisioners.refusal(order.namespace, order.warmPool));
    const answer = provisioner.add(order);
    if (caller === undefined) return answer;
    return answerUntilGivenUp(order, answer, caller, (grant, why) => this.#releaseUnanswered(grant, why));
  }

  /** Releases a served sandbox nobody will take (best effort: its node reaps it at its deadline). */
  #releaseUnanswered(grant: ClaimGrant, why: string): void {
    this.#metrics.releasedUnanswered();
    this.directory.release(scopeOf(grant), grant.id).catch((err: unknown) =>
      this.#options.logger.warn('could not release a sandbox nobody will claim; the node reaps it at its deadline', {
        why,
        id: grant.id,
        node: grant.node,
        deadline: grant.deadline,
        err,
      }),
    );
  }
}
