// What the batch claimer's parts share: the job handle a worker hands over,
// the options, and their resolved form.
import type { BatchJob, BatchProgress, ClaimOutcome } from '@warmpool/api';
import type { Logger } from '@warmpool/runtime';
import type { AgentClient } from '../agents/client.js';
import type { AgentAddress } from '../nodes/addresses.js';
import type { ClaimIndex } from './claim-index.js';
import type { ProvisioningMetrics } from './metrics.js';
import type { Placement } from './placement.js';

export interface BatchJobHandle {
  readonly id: string;
  readonly data: BatchJob;
  /** What an earlier run of this job recorded, if it ran before. */
  readonly progress: BatchProgress | undefined;
  /**
   * The Redis hash BullMQ keeps the job in: the claim index writes this run's
   * progress there with the reservations (in the same script).
   */
  readonly progressKey: string;
}

/** Gets each claim's outcome as soon as it is final. */
export type Emit = (outcome: ClaimOutcome) => void;

export interface BatchClaimerOptions {
  index: ClaimIndex;
  agents: AgentClient;
  placement: Placement;
  /** Every node with an agent address (asked by claim_ref while the index recovers). */
  nodes(): readonly AgentAddress[];
  /** A node's sandbox address as its NodeInventory publishes it (claims adopted from a node carry it). */
  ownerAddrOf(node: string): string | undefined;
  /** Whether a job is still queued or running (its reservations are then its own business). */
  jobAlive(id: string): Promise<boolean>;
  metrics: ProvisioningMetrics;
  logger: Logger;
  /** Nodes asked per claim and run before it fails (default 3). */
  maxAttempts?: number;
  /** How often a claim reserved by another job looks again (default 20 ms). */
  pollMs?: number;
  /** The timeout of each call to a node: a node asked less than this long ago may still be serving the claim. */
  nodeTimeoutMs: number;
  /**
   * A cold placement's call timeout, and how long after a timed-out call the node may still serve the claim (a
   * warm placement can turn into a clone or cold boot on the node). Default: nodeTimeoutMs.
   */
  coldNodeTimeoutMs?: number;
  now?: () => number;
}

export type ClaimerSettings = Required<Omit<BatchClaimerOptions, 'placement'>>;

export function claimerSettings(options: BatchClaimerOptions): ClaimerSettings {
  return {
    ...options,
    maxAttempts: Math.max(1, options.maxAttempts ?? 3),
    pollMs: options.pollMs ?? 20,
    now: options.now ?? Date.now,
    coldNodeTimeoutMs: Math.max(options.nodeTimeoutMs, options.coldNodeTimeoutMs ?? options.nodeTimeoutMs),
  };
}

/** After a node call's timeout, how long before a node that did not show a claim is taken to never serve it. */
export const SETTLE_MARGIN_MS = 250;
