// The claim janitor (leader only): node claims of the SandboxClaim path whose
// SandboxClaim no longer exists are released. The finalizer already releases
// every served claim that is deleted; the janitor covers what it cannot: a
// crash between the node claim and the finalizer write, a finalizer removed by
// hand, a claim made on a node by a pipeline whose caller vanished.
//
// One sweep lists each node's claims once (`GET /v1/sandboxes` on its agent,
// O(nodes) calls, a bounded number at once) and compares the claim_refs
// `<namespace>/<name>` with the SandboxClaim cache. Both front doors write
// claim_refs of that shape, so an HTTP claim must never be mistaken for an
// orphan. A node claim is released only when all of these hold:
// - the SandboxClaim cache is synced and has no claim `<namespace>/<name>`;
// - the node claimed it more than `graceMs` ago (the pipeline writes the
//   shared index right after the node claim; the grace covers that window and
//   any batch still in flight);
// - the shared index does not know it, or knows it as path 'crd'. An index
//   entry of path 'http' or of no recorded path is never released, and a sweep
//   is skipped for a claim whose index lookup fails (Redis down).
// The residual risk is an HTTP claim whose index entry was lost with Redis's
// data while its sandbox lives on; the node's TTL bounds every claim anyway.
import type { SandboxClaim, SandboxRow } from '@warmpool/api';
import type { Lister } from '@warmpool/kube';
import type { Logger, Clock } from '@warmpool/runtime';
import type { ClaimService } from '../../provisioning/claim-service.js';
import type { SandboxClaimMetrics } from './metrics.js';
import type { AgentAddress, NodeClaims } from './node-claims.js';

export interface ClaimJanitorSettings {
  /** Between sweeps (default 60 s). */
  intervalMs: number;
  /** Node claims younger than this are never released (default 60 s). */
  graceMs: number;
  /** Agents asked at once (default 16). */
  concurrency: number;
  /** Per agent call (default 5 s). */
  timeoutMs: number;
}

export const JANITOR_DEFAULTS: ClaimJanitorSettings = {
  intervalMs: 60_000,
  graceMs: 60_000,
  concurrency: 16,
  timeoutMs: 5_000,
};

export interface ClaimJanitorOptions extends Partial<ClaimJanitorSettings> {
  claims: ClaimService;
  cache: Lister<SandboxClaim>;
  cacheSynced(): boolean;
  /** The agents to sweep (from the NodeInventory cache). */
  agents(): AgentAddress[];
  nodeClaims: NodeClaims;
  metrics: SandboxClaimMetrics;
  logger: Logger;
  clock: Clock;
}

export interface SweepResult {
  nodes: number;
  failedNodes: number;
  released: number;
}

/** `<namespace>/<name>` with both parts DNS names, as the CRD path writes it. */
const CLAIM_REF = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$/;

export class ClaimJanitor {
  readonly settings: ClaimJanitorSettings;
  readonly #options: ClaimJanitorOptions;
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<SweepResult> | undefined;
  #stop: AbortController | undefined;

  constructor(options: ClaimJanitorOptions) {
    this.#options = options;
    this.settings = {
      intervalMs: options.intervalMs ?? JANITOR_DEFAULTS.intervalMs,
      graceMs: options.graceMs ?? JANITOR_DEFAULTS.graceMs,
      concurrency: options.concurrency ?? JANITOR_DEFAULTS.concurrency,
      timeoutMs: options.timeoutMs ?? JANITOR_DEFAULTS.timeoutMs,
    };
  }

  start(): void {
    if (this.#timer !== undefined) return;
    this.#stop = new AbortController();
    this.#timer = setInterval(
      () => void this.sweep().catch((err: unknown) => this.#options.logger.warn('claim janitor sweep failed', { err })),
      this.settings.intervalMs,
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

  async #sweep(): Promise<SweepResult> {
    const { metrics, agents } = this.#options;
    if (!this.#options.cacheSynced()) {
      metrics.janitorSwept('skipped');
      return { nodes: 0, failedNodes: 0, released: 0 };
    }
    const signal = this.#stop?.signal ?? new AbortController().signal;
    const all = agents();
    let next = 0;
    let failedNodes = 0;
    let released = 0;
    const lane = async (): Promise<void> => {
      while (next < all.length && !signal.aborted) {
        const agent = all[next++] as AgentAddress;
        try {
          // Awaited first: `released += await …` would read `released` before another lane's addition.
          const n = await this.#sweepNode(agent, signal);
          released += n;
        } catch (err) {
          failedNodes++;
          this.#options.logger.debug('claim janitor: node not swept', { node: agent.node, err });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.settings.concurrency, all.length) }, lane));
    metrics.janitorSwept(failedNodes > 0 ? 'partial' : 'ok');
    return { nodes: all.length, failedNodes, released };
  }

  async #sweepNode(agent: AgentAddress, signal: AbortSignal): Promise<number> {
    const { nodeClaims, cache, clock } = this.#options;
    const rows = await nodeClaims.list(agent, AbortSignal.any([signal, AbortSignal.timeout(this.settings.timeoutMs)]));
    let released = 0;
    for (const row of rows) {
      if (signal.aborted) break;
      const ref = parseClaimRef(row);
      if (ref === undefined || cache.get(ref.namespace, ref.name) !== undefined) continue;
      const claimedAt = Date.parse(row.claimed_at);
      if (Number.isNaN(claimedAt) || clock.now() - claimedAt < this.settings.graceMs) continue;
      // Re-check after the await: the claim may have been created meanwhile.
      if (await this.#releaseOrphan(agent, row, ref, signal)) released++;
    }
    return released;
  }

  async #releaseOrphan(
    agent: AgentAddress,
    row: SandboxRow,
    ref: { namespace: string; name: string },
    signal: AbortSignal,
  ): Promise<boolean> {
    const { claims, cache, nodeClaims, metrics, logger } = this.#options;
    let grant;
    try {
      grant = await claims.lookup(ref.namespace, ref.name);
    } catch (err) {
      logger.debug('claim janitor: index lookup failed; not releasing', { claimRef: row.claim_ref, err });
      return false;
    }
    if (grant !== undefined && grant.path !== 'crd') return false;
    if (cache.get(ref.namespace, ref.name) !== undefined) return false;
    if (grant !== undefined && grant.id === row.id) await claims.release(ref.namespace, ref.name);
    else
      await nodeClaims.release(agent, row.id, AbortSignal.any([signal, AbortSignal.timeout(this.settings.timeoutMs)]));
    metrics.janitorReleased();
    logger.info('claim janitor released a sandbox whose SandboxClaim no longer exists', {
      node: agent.node,
      sandbox: row.id,
      claimRef: row.claim_ref,
    });
    return true;
  }
}

export function parseClaimRef(row: Pick<SandboxRow, 'claim_ref'>): { namespace: string; name: string } | undefined {
  const match = CLAIM_REF.exec(row.claim_ref ?? '');
  if (match?.[1] === undefined || match[3] === undefined) return undefined;
  return { namespace: match[1], name: match[3] };
}
