// The provisioning pipeline, the ClaimService behind both front doors:
// Controller → Provisioner per driven pool → Batcher → one BullMQ job per
// closed batch on the shared Redis → a worker in ANY replica serves it
// (BatchServer: placement, node agents, exactly once) → the reply goes back to
// the replica whose callers wait (ReplyChannel) → each caller gets its claim.
//
// Every replica runs all of it (claims scale out with replicas); nothing here
// is leader-only. Nothing here writes to the apiserver.
import { randomBytes } from 'node:crypto';
import {
  batchJobSchema,
  batchProgressSchema,
  type BatchJob,
  type BatchReply,
  type ClaimOutcome,
  type IndexedOutcome,
  type NodeInventory,
  type SandboxTemplate,
  type SandboxWarmPool,
} from '@warmpool/api';
import type { Batch } from '@warmpool/batcher';
import type { Informer } from '@warmpool/kube';
import { messageOf, type Clock } from '@warmpool/runtime';
import type { Logger } from '@warmpool/runtime';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import type { Registry } from 'prom-client';
import type { AddressCheck } from '../controllers/warmpool/node-addresses.js';
import type { NodeView } from '../controllers/warmpool/nodes.js';
import type { TokenSource } from '../token.js';
import { AgentClaims } from './agent-claims.js';
import { BatchServer, replayOf } from './batch-server.js';
import { ClaimIndex } from './claim-index.js';
import {
  ClaimFailure,
  type ClaimCallOptions,
  type ClaimGrant,
  type ClaimOrder,
  type ClaimService,
  type ServedGrant,
} from './claim-service.js';
import { ProvisionerController } from './controller.js';
import { PROVISIONING_DEFAULTS, type ProvisioningSettings } from './options.js';
import { ProvisioningMetrics } from './metrics.js';
import { nodeSnapshotSource } from './node-snapshots.js';
import { Placement } from './placement.js';
import type { PendingClaim, Provisioner } from './provisioner.js';
import { ReplyChannel } from './reply-channel.js';
import { watchProvisioners } from './watch.js';

export const QUEUE_NAME = 'claims';
export const DEFAULT_PREFIX = 'warmpool';

export interface ProvisioningOptions extends Partial<ProvisioningSettings> {
  redisUrl: string;
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
  clock: Clock;
  logger: Logger;
}

/** A claim as a node holds it. */
export interface NodeClaim {
  node: string;
  id: string;
  /** `<namespace>/<claimRef>` for claims made through warmpool. */
  claimRef: string | undefined;
  deadline: string;
}

export interface ProvisioningPipeline extends ClaimService {
  readonly controller: ProvisionerController;
  /** The shared claim index (the Env claim router records spilled claims in it). */
  readonly index: ClaimIndex;
  readonly settings: Readonly<ProvisioningSettings>;
  /** The claim index's event stream (claimed, renewed, released), which the Sandbox API follows. */
  readonly claimEventsKey: string;
  /** Checks Redis's eviction policy, starts the worker and the reply listener. */
  start(): Promise<void>;
  /**
   * Every claim every node with a NodeInventory holds (for a janitor); nodes that did not answer are named, not
   * guessed.
   */
  listNodeClaims(): Promise<{ claims: NodeClaim[]; unreachable: string[] }>;
  /** Releases one sandbox on its node (root token) and forgets it in the index; false when the node did not know it. */
  releaseOnNode(node: string, id: string, claim?: { namespace: string; claimRef: string }): Promise<boolean>;
}

/** Callers of one job, waiting for their outcomes. */
interface Waiting {
  readonly items: readonly PendingClaim[];
  /** Per item: answered already. */
  readonly answered: boolean[];
  unanswered: number;
  readonly timer: NodeJS.Timeout;
}

export function createProvisioning(options: ProvisioningOptions): ProvisioningPipeline {
  const settings = settingsOf(options);
  const { logger, replica: rawReplica } = options;
  const replica = rawReplica.replaceAll(':', '_');
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  const keyPrefix = `${prefix}:claims:`;

  // Commands fail at once while Redis is away (claims answer 503), rather than queueing behind a reconnect.
  // Auto-pipelining: the index commands a batch issues in one tick go out in one write.
  const redis = new Redis(options.redisUrl, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    retryStrategy: reconnectDelay,
    lazyConnect: true,
    enableAutoPipelining: true,
  });
  const listener = new Redis(options.redisUrl, {
    maxRetriesPerRequest: null,
    retryStrategy: reconnectDelay,
    lazyConnect: true,
  });
  for (const [name, connection] of [
    ['commands', redis],
    ['replies', listener],
  ] as const) {
    connection.on('error', (err: Error) =>
      logger.debug('redis connection error', { connection: name, err: err.message }),
    );
  }
  const bullConnection = { url: options.redisUrl, maxRetriesPerRequest: null, retryStrategy: reconnectDelay };
  const queue = new Queue<BatchJob>(QUEUE_NAME, {
    connection: { ...bullConnection, enableOfflineQueue: false },
    prefix,
  });
  queue.on('error', (err: Error) => logger.debug('claim queue connection error', { err: err.message }));

  const index = new ClaimIndex(redis, { prefix: keyPrefix });
  const agents = new AgentClaims({ token: options.token, timeoutMs: settings.nodeTimeoutMs });
  const placement = new Placement(
    nodeSnapshotSource({
      inventories: options.inventories.lister,
      driverViews: options.driverViews,
      addresses: options.addresses,
      staleAfterMs: options.staleAfterMs,
      clock: options.clock,
    }),
  );
  const jobCounts = async (): Promise<{ waiting: number; active: number }> => {
    const counts = await queue.getJobCounts('waiting', 'active');
    return { waiting: counts.waiting ?? 0, active: counts.active ?? 0 };
  };
  const metrics = new ProvisioningMetrics(options.registry, jobCounts);
  const server = new BatchServer({
    index,
    agents,
    placement,
    jobAlive: async (id) => {
      const state = await queue.getJobState(id);
      return state !== 'completed' && state !== 'failed' && state !== 'unknown';
    },
    metrics,
    logger: logger.child({ component: 'batch-worker' }),
    maxAttempts: settings.maxAttempts,
    nodeTimeoutMs: settings.nodeTimeoutMs,
  });

  const waiting = new Map<string, Waiting>();
  /** Jobs some of whose callers were answered Timeout: a late outcome releases what nobody can come back for. */
  const abandoned = new Map<string, { items: readonly PendingClaim[]; answered: readonly boolean[] }>();
  // Job ids stay unique across restarts of a replica with the same name: BullMQ ignores an add whose id it still holds.
  const jobIdPrefix = `${replica}-${randomBytes(4).toString('hex')}`;
  let sequence = 0;

  const release = async (grant: ClaimGrant): Promise<void> => {
    const address = addressOf(grant.node);
    if (address !== undefined) await agents.release(address, grant.id);
    await index.drop(grant);
  };

  const addressOf = (node: string): string | undefined =>
    options.inventories.lister.get(node)?.spec?.address || undefined;

  const releaseUnanswered = (grant: ClaimGrant, why: string): void => {
    metrics.releasedUnanswered();
    release(grant).catch((err: unknown) =>
      logger.warn('could not release a sandbox nobody will claim; the node reaps it at its deadline', {
        why,
        id: grant.id,
        node: grant.node,
        deadline: grant.deadline,
        err,
      }),
    );
  };

  const answer = (item: PendingClaim, outcome: ClaimOutcome): void => {
    if (outcome.ok) item.resolve(outcome.fresh === true ? { ...outcome.grant, fresh: true } : outcome.grant);
    else
      item.reject(
        new ClaimFailure(
          outcome.reason,
          outcome.message,
          outcome.retryAfterSeconds !== undefined ? { retryAfterSeconds: outcome.retryAfterSeconds } : {},
        ),
      );
  };

  const onReply = (reply: BatchReply): void => {
    const pending = waiting.get(reply.jobId);
    if (pending !== undefined) {
      for (const outcome of reply.outcomes) {
        const item = pending.items[outcome.index];
        if (item === undefined || pending.answered[outcome.index] === true) continue; // answered already (a job run twice)
        pending.answered[outcome.index] = true;
        pending.unanswered--;
        answer(item, outcome);
      }
      if (pending.unanswered === 0) {
        waiting.delete(reply.jobId);
        clearTimeout(pending.timer);
      }
      return;
    }
    const late = abandoned.get(reply.jobId);
    if (late === undefined) return; // every caller of that job has its answer
    for (const outcome of reply.outcomes) {
      const item = late.items[outcome.index];
      if (item === undefined || late.answered[outcome.index] === true) continue;
      if (outcome.ok && item.order.claimRefGenerated === true)
        releaseUnanswered(outcome.grant, 'answered after the caller timed out');
    }
  };
  const replies = new ReplyChannel({ replica, redis, listener, prefix: keyPrefix, onReply, logger });

  const dispatch = async (provisioner: Provisioner, batch: Batch<PendingClaim>): Promise<void> => {
    const items = batch.items;
    metrics.batch(items.length, batch.windowMs);
    const jobId = `${jobIdPrefix}-${++sequence}`;
    const data: BatchJob = {
      replyTo: replica,
      namespace: provisioner.namespace,
      warmPool: provisioner.name,
      key: provisioner.key,
      deadline: Date.now() + settings.claimTimeoutMs,
      claims: items.map(({ order }) => ({
        claimRef: order.claimRef,
        ttlSeconds: order.ttlSeconds,
        path: order.path,
        generated: order.claimRefGenerated === true,
      })),
    };
    const answered = items.map(() => false);
    const timer = setTimeout(() => {
      if (!waiting.delete(jobId)) return;
      abandoned.set(jobId, { items, answered: [...answered] });
      setTimeout(() => abandoned.delete(jobId), settings.claimTimeoutMs * 3).unref();
      items.forEach((item, i) => {
        if (answered[i] !== true)
          item.reject(new ClaimFailure('Timeout', `no answer within ${settings.claimTimeoutMs} ms`));
      });
    }, settings.claimTimeoutMs);
    waiting.set(jobId, { items, answered, unanswered: items.length, timer });
    try {
      await queue.add('batch', data, {
        jobId,
        removeOnComplete: true,
        removeOnFail: { age: 3_600, count: 1_000 },
        attempts: 2,
        backoff: { type: 'fixed', delay: 50 },
      });
    } catch (err) {
      if (!waiting.delete(jobId)) return;
      clearTimeout(timer);
      logger.warn('could not queue a claim batch', { jobId, claims: items.length, err });
      for (const item of items)
        item.reject(
          new ClaimFailure('Unavailable', `Redis is not reachable: ${messageOf(err)}`, {
            retryAfterSeconds: 1,
            cause: err,
          }),
        );
    }
  };

  const controller = new ProvisionerController({
    pools: options.pools.lister,
    templates: options.templates.lister,
    dispatch,
    batcher: settings.batcher,
    logger: logger.child({ component: 'provisioners' }),
  });
  watchProvisioners(controller, options.pools, options.templates);

  let worker: Worker<BatchJob> | undefined;
  const stopping = new AbortController();

  const serveJob = async (job: Job<BatchJob>): Promise<void> => {
    const data = batchJobSchema.parse(job.data);
    const id = job.id ?? '';
    const progress = batchProgressSchema.safeParse(job.progress);
    const answers = new ReplyBatcher(id, data, (reply) => replies.send(data.replyTo, reply));
    try {
      await server.serve(
        {
          id,
          data,
          progress: progress.success ? progress.data : undefined,
          updateProgress: (p) => job.updateProgress(p),
        },
        (outcome) => answers.add(outcome),
      );
    } catch (err) {
      // Another attempt asks the nodes already tried first; the last one answers Unavailable.
      if (job.attemptsMade + 1 < (job.opts.attempts ?? 1)) throw err;
      logger.error('a claim batch failed', { jobId: id, err });
      const message = `the claim batch failed: ${messageOf(err)}`;
      for (const c of data.claims)
        answers.add({ ok: false, claimRef: c.claimRef, reason: 'Unavailable', message, retryAfterSeconds: 1 });
    }
    await answers.flushed();
  };

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
    redis.once('ready', () => {
      checkEvictionPolicy(redis).then(
        (problem) => {
          if (problem !== undefined)
            logger.error(
              `Redis eviction policy: ${problem}. BullMQ loses jobs when Redis evicts keys; set maxmemory-policy noeviction`,
              { redis: redactUrl(options.redisUrl) },
            );
        },
        (err: unknown) => logger.warn("could not read Redis's maxmemory-policy (it must be noeviction)", { err }),
      );
    });
    await redis
      .connect()
      .catch((err: unknown) =>
        logger.error('Redis (--redis-url) is not reachable: claims answer 503 until it is', { err }),
      );
    void listener.connect().catch(() => undefined);
    replies.start();
    // A worker places claims from the inventory cache: it takes jobs only once that cache is filled.
    void options.inventories.waitForSync(stopping.signal).then(startWorker, () => undefined);
    controller.sync();
    logger.info('provisioning started', { replica, redis: redactUrl(options.redisUrl), ...settings });
  };

  const startWorker = (): void => {
    if (stopping.signal.aborted) return;
    worker = new Worker<BatchJob>(QUEUE_NAME, serveJob, {
      connection: bullConnection,
      prefix,
      concurrency: settings.workerConcurrency,
      lockDuration: settings.lockDurationMs,
      stalledInterval: settings.stalledIntervalMs,
      maxStalledCount: 2,
      drainDelay: 1,
    });
    worker.on('error', (err: Error) => logger.debug('claim worker connection error', { err: err.message }));
    worker.on('stalled', (jobId) => {
      metrics.stalledJob();
      logger.warn(
        'a claim batch job stalled (its worker died or froze): serving it here, asking the nodes it tried first',
        { jobId },
      );
    });
    worker.on('failed', (job, err) =>
      logger.warn('claim batch job failed', { jobId: job?.id, attempts: job?.attemptsMade, err: err.message }),
    );
  };

  const claim = async (order: ClaimOrder, callOptions: ClaimCallOptions = {}): Promise<ServedGrant> => {
    const started = performance.now();
    try {
      const grant = await claimOnce(order, callOptions.signal);
      metrics.served(order.path, grant.tier, (performance.now() - started) / 1000);
      return grant;
    } catch (err) {
      const failure =
        err instanceof ClaimFailure ? err : new ClaimFailure('Unavailable', messageOf(err), { cause: err });
      metrics.failed(order.path, failure.reason);
      throw failure;
    }
  };

  const claimOnce = (order: ClaimOrder, signal: AbortSignal | undefined): Promise<ServedGrant> => {
    const reasons = notReadyReasons();
    if (reasons.length > 0)
      return Promise.reject(
        new ClaimFailure('Unavailable', `not ready to claim: ${reasons.join('; ')}`, { retryAfterSeconds: 1 }),
      );
    const provisioner = controller.get(order.namespace, order.warmPool);
    if (provisioner === undefined || !provisioner.accepting)
      return Promise.reject(controller.refusal(order.namespace, order.warmPool));
    const answer = provisioner.add(order);
    if (signal === undefined) return answer;
    if (signal.aborted) {
      void answer.then(
        (grant) => order.claimRefGenerated === true && releaseUnanswered(grant, 'the caller gave up'),
        () => undefined,
      );
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
          else if (order.claimRefGenerated === true) releaseUnanswered(grant, 'the caller gave up');
        },
        (err: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(err);
        },
      );
    });
  };

  const lookup = async (namespace: string, idOrClaimRef: string): Promise<ClaimGrant | undefined> => {
    try {
      return await index.lookup(namespace, idOrClaimRef);
    } catch (err) {
      throw new ClaimFailure('Unavailable', `Redis is not reachable: ${messageOf(err)}`, {
        retryAfterSeconds: 1,
        cause: err,
      });
    }
  };

  const renew = async (namespace: string, idOrClaimRef: string, ttlSeconds: number): Promise<{ deadline: string }> => {
    const grant = await lookup(namespace, idOrClaimRef);
    if (grant === undefined) throw new ClaimFailure('ClaimNotFound', `claim ${namespace}/${idOrClaimRef} not found`);
    const address = addressOf(grant.node);
    if (address === undefined)
      throw new ClaimFailure(
        'Unavailable',
        `node ${grant.node} of claim ${namespace}/${idOrClaimRef} has no NodeInventory`,
        { retryAfterSeconds: 1 },
      );
    let renewed: { deadline: string } | undefined;
    try {
      renewed = await agents.renew(address, grant.id, ttlSeconds);
    } catch (err) {
      throw new ClaimFailure('Timeout', `node ${grant.node} did not renew: ${messageOf(err)}`, { cause: err });
    }
    if (renewed === undefined) {
      await index.drop(grant).catch(() => undefined);
      throw new ClaimFailure('ClaimNotFound', `claim ${namespace}/${idOrClaimRef} is gone from node ${grant.node}`);
    }
    await index
      .renewed(grant, renewed.deadline)
      .catch((err: unknown) => logger.warn('renewed on the node but not in the index', { id: grant.id, err }));
    return renewed;
  };

  const releaseClaim = async (namespace: string, idOrClaimRef: string): Promise<boolean> => {
    const grant = await lookup(namespace, idOrClaimRef);
    if (grant === undefined) return false;
    const address = addressOf(grant.node);
    if (address !== undefined) {
      try {
        await agents.release(address, grant.id);
      } catch (err) {
        throw new ClaimFailure('Timeout', `node ${grant.node} did not release: ${messageOf(err)}`, { cause: err });
      }
    }
    await index.drop(grant);
    return true;
  };

  const listNodeClaims = async (): Promise<{ claims: NodeClaim[]; unreachable: string[] }> => {
    const claims: NodeClaim[] = [];
    const unreachable: string[] = [];
    await Promise.all(
      options.inventories.lister.list().map(async (inventory) => {
        const node = inventory.metadata?.name ?? '';
        const address = inventory.spec?.address ?? '';
        if (node === '' || address === '') return;
        try {
          for (const row of await agents.list(address))
            claims.push({ node, id: row.id, claimRef: row.claim_ref, deadline: row.deadline });
        } catch (err) {
          logger.debug('could not list the claims of a node', { node, err });
          unreachable.push(node);
        }
      }),
    );
    return { claims, unreachable };
  };

  const releaseOnNode = async (
    node: string,
    id: string,
    claim?: { namespace: string; claimRef: string },
  ): Promise<boolean> => {
    const address = addressOf(node);
    if (address === undefined)
      throw new ClaimFailure('Unavailable', `node ${node} has no NodeInventory`, { retryAfterSeconds: 1 });
    const released = await agents.release(address, id);
    if (claim !== undefined) {
      const record = await index.lookup(claim.namespace, id);
      if (record !== undefined) await index.drop(record);
    }
    return released;
  };

  const close = async (): Promise<void> => {
    stopping.abort();
    const steps: Array<[string, () => Promise<unknown>]> = [
      ['provisioners', () => controller.close()],
      ['worker', async () => worker?.close()],
      ['queue', () => queue.close()],
      ['replies', () => replies.close()],
      ['agents', () => agents.close()],
      ['redis', async () => redis.disconnect()],
    ];
    for (const [name, step] of steps) {
      try {
        await step();
      } catch (err) {
        logger.warn('closing the provisioning pipeline: a step failed', { step: name, err });
      }
    }
    for (const [, pending] of waiting) clearTimeout(pending.timer);
  };

  return {
    controller,
    index,
    settings,
    claimEventsKey: index.eventsKey,
    start,
    claim,
    lookup,
    renew,
    release: releaseClaim,
    listNodeClaims,
    releaseOnNode,
    notReadyReasons,
    close,
  };
}

/**
 * A job's outcomes on their way back: each claim's outcome goes to every
 * position of its claimRef in the batch; outcomes that become final in the
 * same tick share one reply (one LPUSH when the caller is another replica).
 */
class ReplyBatcher {
  readonly #jobId: string;
  readonly #positions = new Map<string, number[]>();
  readonly #send: (reply: BatchReply) => Promise<void>;
  #pending: IndexedOutcome[] = [];
  readonly #sending: Array<Promise<void>> = [];
  #failure: unknown;

  constructor(jobId: string, data: BatchJob, send: (reply: BatchReply) => Promise<void>) {
    this.#jobId = jobId;
    this.#send = send;
    data.claims.forEach((claim, index) => {
      const positions = this.#positions.get(claim.claimRef);
      if (positions === undefined) this.#positions.set(claim.claimRef, [index]);
      else positions.push(index);
    });
  }

  add(outcome: ClaimOutcome): void {
    if (this.#pending.length === 0) setImmediate(() => this.#flush());
    (this.#positions.get(outcome.claimRef) ?? []).forEach((index, i) =>
      this.#pending.push({ ...(i === 0 ? outcome : replayOf(outcome)), index }),
    );
  }

  /** Resolves once every outcome added so far is delivered; rejects when one could not be. */
  async flushed(): Promise<void> {
    this.#flush();
    await Promise.all(this.#sending);
    if (this.#failure !== undefined) throw this.#failure;
  }

  #flush(): void {
    if (this.#pending.length === 0) return;
    const outcomes = this.#pending;
    this.#pending = [];
    // Caught here (a send may fail before flushed() is awaited) and rethrown by flushed().
    this.#sending.push(
      this.#send({ jobId: this.#jobId, outcomes }).catch((err: unknown) => {
        this.#failure ??= err;
      }),
    );
  }
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

function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparsable url)';
  }
}

function settingsOf(options: Partial<ProvisioningSettings>): ProvisioningSettings {
  const settings: ProvisioningSettings = { ...PROVISIONING_DEFAULTS };
  for (const name of Object.keys(PROVISIONING_DEFAULTS) as Array<keyof ProvisioningSettings>) {
    if (options[name] !== undefined) Object.assign(settings, { [name]: options[name] });
  }
  return settings;
}
