// The provisioning pipeline, the ClaimService behind every front door, as a
// composition of its parts, split at the queue as BullMQ splits Queue and
// Worker: Controller → Provisioner per driven pool → Batcher → ClaimDispatcher
// (one BullMQ job per closed batch, callers waiting on this replica) → a
// ClaimWorker in ANY replica (BatchClaimer: placement, node agents, exactly
// once) → the reply on the waiting replica's list (ReplyChannel) → each
// caller gets its claim. Get, renew and release go through the ClaimDirectory
// (the index, else the nodes).
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
import { vouchedAgents, type AddressCheck, type AgentAddress } from '../nodes/addresses.js';
import type { NodeView } from '../nodes/tracker.js';
import { bullConnection, connect, describeRedis, type RedisSettings } from '../redis/connection.js';
import type { TokenSource } from '../token.js';
import { AgentClient } from '../agents/client.js';
import { BatchClaimer } from './batch-claimer.js';
import { ClaimDirectory } from './claim-directory.js';
import { ClaimIndex, scopeOf } from './claim-index.js';
import {
  ClaimFailure,
  type ClaimCallOptions,
  type ClaimGrant,
  type ServedGrant,
  type ClaimOrder,
  type ClaimScope,
  type ClaimService,
  type LookupOptions,
} from './claim-service.js';
import { ClaimWorker } from './claim-worker.js';
import { ProvisionerRegistry } from './provisioners.js';
import { ClaimDispatcher } from './dispatcher.js';
import { PROVISIONING_DEFAULTS, type ProvisioningSettings } from './options.js';
import { ProvisioningMetrics } from './metrics.js';
import { nodeOwnerAddrs } from './node-owner-addrs.js';
import { nodeSnapshotSource } from '../nodes/snapshots.js';
import { Placement } from './placement.js';
import { ReplyChannel } from './reply-channel.js';
import { watchProvisioners } from './watch.js';
import type { Runnable } from '../manager/runnable.js';

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
  const settings = settingsOf(options);
  const { logger } = options;
  const replica = options.replica.replaceAll(':', '_');
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  const { redis, listener, bull } = connectionsOf(options.redis, logger);
  const bullPrefix = `${prefix}:bull`;
  const queue = new Queue<BatchJob>(QUEUE_NAME, {
    connection: bullConnection(options.redis, { ...bull, enableOfflineQueue: false }),
    prefix: bullPrefix,
  });
  queue.on('error', (err: Error) => logger.debug('claim queue connection error', { err: err.message }));

  const index = new ClaimIndex(redis, { prefix: `${prefix}:index:` });
  const agents = new AgentClient({ token: options.token, timeoutMs: settings.nodeTimeoutMs, logger });
  const nodes = (): AgentAddress[] => vouchedAgents(options.inventories.lister, options.addresses());
  const ownerAddrOf = nodeOwnerAddrs(options.inventories.lister);
  const directory = new ClaimDirectory({ index, agents, nodes, ownerAddrOf, logger });
  const metrics = new ProvisioningMetrics(options.registry, async () => {
    const counts = await queue.getJobCounts('waiting', 'active');
    return { waiting: counts.waiting ?? 0, active: counts.active ?? 0 };
  });
  const releaseUnanswered = (grant: ClaimGrant, why: string): void => {
    metrics.releasedUnanswered();
    directory.release(scopeOf(grant), grant.id).catch((err: unknown) =>
      logger.warn('could not release a sandbox nobody will claim; the node reaps it at its deadline', {
        why,
        id: grant.id,
        node: grant.node,
        deadline: grant.deadline,
        err,
      }),
    );
  };
  const dispatcher = new ClaimDispatcher({
    queue,
    replica,
    claimTimeoutMs: settings.claimTimeoutMs,
    metrics,
    releaseUnanswered,
    logger,
  });
  const replies = new ReplyChannel({
    replica,
    redis,
    listener,
    prefix: `${prefix}:`,
    onReply: dispatcher.onReply,
    logger,
  });
  const claimer = new BatchClaimer({
    index,
    agents,
    placement: new Placement(
      nodeSnapshotSource({
        inventories: options.inventories.lister,
        driverViews: options.driverViews,
        addresses: options.addresses,
        staleAfterMs: options.staleAfterMs,
        clock: options.clock,
      }),
    ),
    nodes,
    ownerAddrOf,
    jobAlive: async (id) => {
      const state = await queue.getJobState(id);
      return state !== 'completed' && state !== 'failed' && state !== 'unknown';
    },
    metrics,
    logger: logger.child({ component: 'batch-worker' }),
    maxAttempts: settings.maxAttempts,
    nodeTimeoutMs: settings.nodeTimeoutMs,
    coldNodeTimeoutMs: settings.coldNodeTimeoutMs,
  });
  const worker = new ClaimWorker({
    queueName: QUEUE_NAME,
    prefix: bullPrefix,
    connection: bullConnection(options.redis, bull),
    claimer,
    send: (replyTo, reply) => replies.send(replyTo, reply),
    concurrency: settings.workerConcurrency,
    lockDurationMs: settings.lockDurationMs,
    stalledIntervalMs: settings.stalledIntervalMs,
    metrics,
    logger,
  });
  const provisioners = new ProvisionerRegistry({
    pools: options.pools.lister,
    templates: options.templates.lister,
    dispatch: dispatcher.dispatch,
    batcher: settings.batcher,
    logger: logger.child({ component: 'provisioners' }),
  });
  watchProvisioners(provisioners, options.pools, options.templates);
  const stopping = new AbortController();

  const notReadyReasons = (): string[] => {
    const reasons: string[] = [];
    if (redis.status !== 'ready') reasons.push(`Redis (--redis-url) is not reachable (connection ${redis.status})`);
    for (const informer of [options.pools, options.templates, options.inventories]) {
      if (!informer.hasSynced()) reasons.push(`${informer.type.kind} cache not synced yet`);
    }
    return reasons;
  };

  const start = async (): Promise<void> => {
    // Checked on the first connection (now, or whenever Redis first answers).
    redis.once('ready', () => warnUnlessNoEviction(redis, options.redis, logger));
    await redis
      .connect()
      .catch((err: unknown) =>
        logger.error('Redis (--redis-url) is not reachable: claims answer 503 until it is', { err }),
      );
    void listener.connect().catch(() => undefined);
    replies.start();
    // A worker places claims from the inventory cache: it takes jobs only once that cache is filled.
    void options.inventories.waitForSync(stopping.signal).then(
      () => worker.start(),
      () => undefined,
    );
    provisioners.sync();
    logger.info('provisioning started', { replica, redis: describeRedis(options.redis), ...settings });
  };

  const claim = async (order: ClaimOrder, callOptions: ClaimCallOptions = {}): Promise<ServedGrant> => {
    const started = performance.now();
    try {
      const grant = await submit(order, callOptions.signal);
      metrics.served(order.owner.door, grant.tier, (performance.now() - started) / 1000);
      options.onServed?.(order, grant);
      return grant;
    } catch (err) {
      const failure =
        err instanceof ClaimFailure ? err : new ClaimFailure('Unavailable', messageOf(err), { cause: err });
      metrics.failed(order.owner.door, failure.reason);
      throw failure;
    }
  };

  /** Adds the order to its pool's batch; with a signal, a caller who gives up is answered Timeout at once. */
  const submit = (order: ClaimOrder, signal: AbortSignal | undefined): Promise<ServedGrant> => {
    const reasons = notReadyReasons();
    if (reasons.length > 0)
      return Promise.reject(
        new ClaimFailure('Unavailable', `not ready to claim: ${reasons.join('; ')}`, { retryAfterSeconds: 1 }),
      );
    const provisioner = provisioners.get(order.namespace, order.warmPool);
    if (provisioner === undefined || !provisioner.accepting)
      return Promise.reject(provisioners.refusal(order.namespace, order.warmPool));
    const answer = provisioner.add(order);
    if (signal === undefined) return answer;
    // Nobody can come back for a sandbox served under a generated claimRef: released when its caller is gone.
    const abandon = (grant: ServedGrant): void => {
      // Only a sandbox claimed for this very call: a replayed one is someone else's (a generated name can collide).
      if (order.claimRefGenerated === true && grant.fresh === true) releaseUnanswered(grant, 'the caller gave up');
    };
    if (signal.aborted) {
      void answer.then(abandon, () => undefined);
      return Promise.reject(new ClaimFailure('Timeout', 'the caller gave up'));
    }
    return new Promise<ServedGrant>((resolve, reject) => {
      let gaveUp = false;
      const onAbort = (): void => {
        gaveUp = true;
        reject(new ClaimFailure('Timeout', 'the caller gave up'));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      answer.then(
        (grant) => {
          signal.removeEventListener('abort', onAbort);
          if (!gaveUp) resolve(grant);
          else abandon(grant);
        },
        (err: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(err);
        },
      );
    });
  };

  const close = async (): Promise<void> => {
    stopping.abort();
    await closeInOrder(
      'the provisioning pipeline',
      [
        ['provisioners', () => provisioners.close()],
        ['worker', () => worker.close()],
        ['queue', () => queue.close()],
        ['replies', () => replies.close()],
        ['agents', () => agents.close()],
        ['index', () => index.close()],
        ['redis', () => redis.disconnect()],
      ],
      logger,
    );
    dispatcher.close();
  };

  return {
    provisioners,
    index,
    directory,
    settings,
    claimEventsKey: index.eventsKey,
    name: 'claim pipeline',
    needsLeader: false,
    start,
    claim,
    lookup: (scope: ClaimScope, id: string, lookupOptions?: LookupOptions) =>
      directory.lookup(scope, id, lookupOptions),
    renew: (scope: ClaimScope, id: string, ttlSeconds: number) => directory.renew(scope, id, ttlSeconds),
    release: (scope: ClaimScope, id: string) => directory.release(scope, id),
    notReadyReasons,
    close,
  };
}

/**
 * The commands connection fails at once while Redis is away (claims answer
 * 503) rather than queueing behind a reconnect, and auto-pipelines (the index
 * commands a batch issues in one tick go out in one write); the reply
 * listener blocks on a connection of its own; BullMQ makes its own from the
 * same settings with `bull`'s overrides.
 */
function connectionsOf(
  settings: RedisSettings,
  logger: Logger,
): { redis: Redis; listener: Redis; bull: { maxRetriesPerRequest: null; retryStrategy: (times: number) => number } } {
  const redis = connect(settings, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    retryStrategy: reconnectDelay,
    lazyConnect: true,
    enableAutoPipelining: true,
  });
  const listener = connect(settings, { maxRetriesPerRequest: null, retryStrategy: reconnectDelay, lazyConnect: true });
  for (const [name, connection] of [
    ['commands', redis],
    ['replies', listener],
  ] as const) {
    connection.on('error', (err: Error) =>
      logger.debug('redis connection error', { connection: name, err: err.message }),
    );
  }
  return { redis, listener, bull: { maxRetriesPerRequest: null, retryStrategy: reconnectDelay } };
}

function warnUnlessNoEviction(redis: Redis, settings: RedisSettings, logger: Logger): void {
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

function settingsOf(options: Partial<ProvisioningSettings>): ProvisioningSettings {
  const settings: ProvisioningSettings = { ...PROVISIONING_DEFAULTS };
  for (const name of Object.keys(PROVISIONING_DEFAULTS) as Array<keyof ProvisioningSettings>) {
    if (options[name] !== undefined) Object.assign(settings, { [name]: options[name] });
  }
  return settings;
}
