// Builds a replica's side of the claim queue that serves batches: the
// BatchClaimer (placement, node agents, the claim index) inside a BullMQ
// Worker whose outcomes go back on the reply lists.
import type { NodeInventory } from '@warmpool/api';
import type { Informer } from '@warmpool/kube';
import type { Logger } from '@warmpool/runtime';
import type { ConnectionOptions, Queue } from 'bullmq';
import type { AgentClient } from '../agents/client.js';
import type { AgentAddress } from '../nodes/addresses.js';
import { nodeSnapshotSource, type NodeSnapshotSourceOptions } from '../nodes/snapshots.js';
import { BatchClaimer } from './batch-claimer.js';
import type { ClaimIndex } from './claim-index.js';
import { ClaimWorker } from './claim-worker.js';
import type { ProvisioningMetrics } from './metrics.js';
import type { ProvisioningSettings } from './options.js';
import { Placement } from './placement.js';
import type { ReplyChannel } from './reply-channel.js';

export interface BatchWorkerParts {
  queue: Queue;
  queueName: string;
  prefix: string;
  connection: ConnectionOptions;
  index: ClaimIndex;
  agents: AgentClient;
  replies: ReplyChannel;
  inventories: Informer<NodeInventory>;
  snapshots: Omit<NodeSnapshotSourceOptions, 'inventories'>;
  nodes(): readonly AgentAddress[];
  ownerAddrOf(node: string): string | undefined;
  settings: ProvisioningSettings;
  metrics: ProvisioningMetrics;
  logger: Logger;
}

export function batchWorker(parts: BatchWorkerParts): ClaimWorker {
  const { queue, settings, metrics, logger } = parts;
  const claimer = new BatchClaimer({
    index: parts.index,
    agents: parts.agents,
    placement: new Placement(nodeSnapshotSource({ ...parts.snapshots, inventories: parts.inventories.lister })),
    nodes: parts.nodes,
    ownerAddrOf: parts.ownerAddrOf,
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
  return new ClaimWorker({
    queueName: parts.queueName,
    prefix: parts.prefix,
    connection: parts.connection,
    claimer,
    send: (replyTo, reply) => parts.replies.send(replyTo, reply),
    concurrency: settings.workerConcurrency,
    lockDurationMs: settings.lockDurationMs,
    stalledIntervalMs: settings.stalledIntervalMs,
    drainMs: settings.claimTimeoutMs,
    metrics,
    logger,
  });
}
