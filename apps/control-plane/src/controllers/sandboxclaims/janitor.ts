// The claim janitor (leader only) sweeps every node's claims (one list per
// node, a bounded number of nodes at once). Each row whose claim_ref warmpool
// wrote (libs/api node-claim-ref) is either:
// - released, when it is a SandboxClaim's sandbox and that SandboxClaim's uid
//   is positively gone from the apiserver (the synced cache has no claim of
//   that name, or one with another uid) and the node claimed it more than
//   `graceMs` ago: a claim deleted while no leader ran (an outage, a leader
//   change before the new cache saw it), a crash between the node claim and
//   the claim's answer. The claim's Secret goes with it (the one controlled
//   by that uid; the garbage collector would delete it too);
// - or recorded again in the claim index when the index lacks it: the nodes
//   are the truth and Redis may lose any key.
// HTTP and federated claims are never released here: they end by release or
// at their deadline on the node. Rows warmpool did not write are left alone.
// While the index recovers from a loss the janitor sweeps at once (every
// `recoveryPollMs`), and a complete sweep ends the recovery.
import {
  parseNodeClaimRef,
  type ClaimRecord,
  type NodeClaimOwner,
  type SandboxClaim,
  type TolerantSandboxRow,
} from '@warmpool/api';
import type { Lister } from '@warmpool/kube';
import type { Logger, Clock } from '@warmpool/runtime';
import type { ClaimIndex } from '../../provisioning/claim-index.js';
import { scopeOfNodeClaim } from '../../provisioning/claim-index-values.js';
import type { SandboxClaimMetrics } from './metrics.js';
import type { AgentClient } from '../../agents/client.js';
import type { AgentAddress } from '../../nodes/addresses.js';

export interface ClaimJanitorSettings {
  /** Between sweeps (default 60 s). */
  intervalMs: number;
  /** Node claims younger than this are never released (default 60 s). */
  graceMs: number;
  /** Agents asked at once (default 16). */
  concurrency: number;
  /** Per agent call (default 5 s). */
  timeoutMs: number;
  /** How often the janitor looks whether the claim index is recovering from a loss (default 2 s). */
  recoveryPollMs: number;
  /** After a loss, how long node calls from before it may still be under way (the node call timeout and a margin). */
  settleMs: number;
}

export const JANITOR_DEFAULTS: ClaimJanitorSettings = {
  intervalMs: 60_000,
  graceMs: 60_000,
  concurrency: 16,
  timeoutMs: 5_000,
  recoveryPollMs: 2_000,
  settleMs: 2_500,
};

/** What the janitor needs of the claim pipeline: the index, and a node's claim as the index records it. */
/** What the janitor asks each node agent: the claims it holds, and the release of one (already gone: done). */
export interface NodeClaims {
  list(agent: AgentAddress, signal: AbortSignal): Promise<TolerantSandboxRow[]>;
  release(agent: AgentAddress, id: string, signal: AbortSignal): Promise<void>;
}

/** The janitor's questions, asked through the agent client. */
export function nodeClaimsOf(client: Pick<AgentClient, 'list' | 'release'>): NodeClaims {
  return {
    list: (agent, signal) => client.list(agent.address, { signal }),
    release: async (agent, id, signal) => {
      await client.release(agent.address, id, { signal });
    },
  };
}

export interface ClaimRepair {
  readonly index: Pick<ClaimIndex, 'lookup' | 'record' | 'drop' | 'recovering' | 'endRecovery'>;
  recordOf(agent: AgentAddress, row: TolerantSandboxRow): Promise<ClaimRecord | undefined>;
}

export interface ClaimJanitorOptions extends Partial<ClaimJanitorSettings> {
  repair: ClaimRepair;
  cache: Lister<SandboxClaim>;
  cacheSynced(): boolean;
  /** The agents to sweep (from the NodeInventory cache). */
  agents(): AgentAddress[];
  nodeClaims: NodeClaims;
  /** Deletes the sandbox Secret `ref` if the claim of uid `owner` controls it (ClaimWriter.deleteSecretOf). */
  deleteSecret(ref: { namespace: string; name: string }, owner: string): Promise<void>;
  metrics: SandboxClaimMetrics;
  logger: Logger;
  clock: Clock;
}

export interface SweepResult {
  nodes: number;
  failedNodes: number;
  released: number;
  /** Claims the index lacked, recorded again from their nodes. */
  recorded: number;
  /** When the sweep started (clock ms): only one that started after a loss settled can end its recovery. */
  startedAt: number;
}

export class ClaimJanitor {
  readonly settings: ClaimJanitorSettings;
  readonly #options: ClaimJanitorOptions;
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<SweepResult> | undefined;
  #stop: AbortController | undefined;
  #lastSweepAt = 0;

  constructor(options: ClaimJanitorOptions) {
    this.#options = options;
    this.settings = {
      intervalMs: options.intervalMs ?? JANITOR_DEFAULTS.intervalMs,
      graceMs: options.graceMs ?? JANITOR_DEFAULTS.graceMs,
      concurrency: options.concurrency ?? JANITOR_DEFAULTS.concurrency,
      timeoutMs: options.timeoutMs ?? JANITOR_DEFAULTS.timeoutMs,
      recoveryPollMs: options.recoveryPollMs ?? JANITOR_DEFAULTS.recoveryPollMs,
      settleMs: options.settleMs ?? JANITOR_DEFAULTS.settleMs,
    };
  }

  start(): void {
    if (this.#timer !== undefined) return;
    this.#stop = new AbortController();
    this.#lastSweepAt = this.#options.clock.now();
    this.#timer = setInterval(
      () => void this.#tick().catch((err: unknown) => this.#options.logger.warn('claim janitor sweep failed', { err })),
      Math.min(this.settings.intervalMs, this.settings.recoveryPollMs),
    );
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#stop?.abort();
    await this.#sweeping?.catch(() => undefined);
  }

  /** One sweep (a sweep already running is joined, not doubled). */
  sweep(): Promise<SweepResult> {
    this.#sweeping ??= this.#sweep().finally(() => {
      this.#sweeping = undefined;
    });
    return this.#sweeping;
  }

  /** A sweep every interval, and at once while the index recovers (which a complete sweep ends). */
  async #tick(): Promise<void> {
    const now = this.#options.clock.now();
    const recovering = await this.#options.repair.index.recovering().catch(() => undefined);
    if (recovering !== undefined) {
      const settledAt = recovering.since + this.settings.settleMs;
      if (now < settledAt) return;
      let result = await this.sweep();
      // A sweep already under way may have listed nodes before the loss, against the index that was lost.
      if (result.startedAt < settledAt) result = await this.sweep();
      if (result.failedNodes === 0 && (await this.#options.repair.index.endRecovery(recovering.marker)))
        this.#options.logger.info('claim index rebuilt from the nodes after a loss', {
          nodes: result.nodes,
          recorded: result.recorded,
        });
      return;
    }
    if (now - this.#lastSweepAt >= this.settings.intervalMs) await this.sweep();
  }

  async #sweep(): Promise<SweepResult> {
    const { metrics, agents } = this.#options;
    const startedAt = this.#options.clock.now();
    this.#lastSweepAt = startedAt;
    const signal = this.#stop?.signal ?? new AbortController().signal;
    const all = agents();
    const result: SweepResult = { nodes: all.length, failedNodes: 0, released: 0, recorded: 0, startedAt };
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next < all.length && !signal.aborted) {
        const agent = all[next++] as AgentAddress;
        try {
          await this.#sweepNode(agent, signal, result);
        } catch (err) {
          result.failedNodes++;
          this.#options.logger.debug('claim janitor: node not swept', { node: agent.node, err });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.settings.concurrency, all.length) }, lane));
    metrics.janitorSwept(result.failedNodes > 0 ? 'partial' : 'ok');
    return result;
  }

  async #sweepNode(agent: AgentAddress, signal: AbortSignal, result: SweepResult): Promise<void> {
    const { nodeClaims, repair } = this.#options;
    const rows = await nodeClaims.list(agent, AbortSignal.any([signal, AbortSignal.timeout(this.settings.timeoutMs)]));
    for (const row of rows) {
      if (signal.aborted) break;
      const owner = parseNodeClaimRef(row.claim_ref);
      if (owner === undefined) continue;
      if (owner.door === 'crd' && this.#tombstoned(owner, row)) {
        await this.#releaseOrphan(agent, row, signal);
        result.released++;
        continue;
      }
      const known = await repair.index.lookup(scopeOfNodeClaim(owner), row.id);
      if (known !== undefined) continue;
      const record = await repair.recordOf(agent, row);
      if (record !== undefined && (await repair.index.record(record, '')).ok) result.recorded++;
    }
  }

  /** The SandboxClaim this row was claimed for is positively gone (its uid), and the claim is past its grace. */
  #tombstoned(owner: Extract<NodeClaimOwner, { door: 'crd' }>, row: TolerantSandboxRow): boolean {
    const { cache, cacheSynced, clock } = this.#options;
    if (!cacheSynced()) return false;
    const current = cache.get(owner.namespace, owner.name);
    if (current !== undefined && current.metadata.uid === owner.uid) return false;
    // A row without claimed_at (an older daemon) never proves it is past the grace: its node reaps it at its deadline.
    const claimedAt = Date.parse(row.claimed_at ?? '');
    return !Number.isNaN(claimedAt) && clock.now() - claimedAt >= this.settings.graceMs;
  }

  async #releaseOrphan(agent: AgentAddress, row: TolerantSandboxRow, signal: AbortSignal): Promise<void> {
    const { nodeClaims, metrics, logger, repair } = this.#options;
    await nodeClaims.release(agent, row.id, AbortSignal.any([signal, AbortSignal.timeout(this.settings.timeoutMs)]));
    const owner = parseNodeClaimRef(row.claim_ref);
    if (owner !== undefined) {
      const known = await repair.index.lookup(scopeOfNodeClaim(owner), row.id).catch(() => undefined);
      if (known !== undefined) await repair.index.drop(known).catch(() => undefined);
    }
    if (owner?.door === 'crd')
      await this.#options
        .deleteSecret({ namespace: owner.namespace, name: owner.name }, owner.uid)
        .catch((err: unknown) =>
          logger.warn(
            'claim janitor: the Secret of a released SandboxClaim sandbox not deleted (its owner reference lets the garbage collector)',
            {
              claimRef: row.claim_ref,
              err,
            },
          ),
        );
    metrics.janitorReleased();
    logger.info('claim janitor released a sandbox whose SandboxClaim no longer exists', {
      node: agent.node,
      sandbox: row.id,
      claimRef: row.claim_ref,
    });
  }
}
