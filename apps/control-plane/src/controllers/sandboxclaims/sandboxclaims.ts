// The SandboxClaim front door, composed: the informer over SandboxClaims in
// every namespace, the controller and the claim janitor.
//
// Which replica processes SandboxClaims: the leader only. Every replica keeps
// the SandboxClaim cache warm, so a new leader starts at once, but only the
// lease holder writes claims. Why not every replica with sharding: the claim
// pipeline already spreads the work (each batch is a BullMQ job any replica's
// worker may serve), so the controller's own share — a few apiserver writes
// per claim — is what the leader does; sharding would add a membership
// protocol for that alone, and two replicas briefly owning one shard would
// write one claim's status twice. A deposed leader stops taking claims at
// once; a claim it had in flight is answered idempotently to the next leader
// (same claimRef, same sandbox).
import {
  SandboxClaimType,
  type NodeInventory,
  type SandboxClaim,
  type SandboxTemplate,
  type SandboxWarmPool,
} from '@warmpool/api';
import { createInformer, type Informer, type KubeLogger, type KubeConfig } from '@warmpool/kube';
import type { Logger, Clock } from '@warmpool/runtime';
import type { Registry } from 'prom-client';
import { vouchedAgents, type AddressCheck } from '../../nodes/addresses.js';
import type { Runnable } from '../../manager/runnable.js';
import type { ClaimService } from '../../provisioning/claim-service.js';
import type { ClaimRepair } from './janitor.js';
import type { TokenSource } from '../../agents/token.js';
import { SandboxClaimController, type SandboxClaimSettings } from './controller.js';
import { ClaimJanitor, JANITOR_DEFAULTS, nodeClaimsOf, type ClaimJanitorSettings } from './janitor.js';
import { AgentClient } from '../../agents/client.js';
import { SandboxClaimMetrics } from './metrics.js';
import { watchSandboxClaims } from './watch.js';
import { ClaimWriter } from './writer.js';

export interface SandboxClaimsOptions {
  kubeConfig: KubeConfig;
  claims: ClaimService;
  /** The claim index and the nodes' records: the janitor releases SandboxClaim orphans and repairs the index. */
  repair: ClaimRepair;
  pools: Informer<SandboxWarmPool>;
  templates: Informer<SandboxTemplate>;
  inventories: Informer<NodeInventory>;
  /**
   * The driver's address check: the janitor calls an agent (with the fleet token) only where its Node vouches for it.
   */
  addresses: () => AddressCheck;
  token: TokenSource;
  registry: Registry;
  logger: Logger;
  kubeLogger: KubeLogger;
  clock: Clock;
  controller?: Partial<SandboxClaimSettings>;
  janitor?: Partial<ClaimJanitorSettings>;
}

export class SandboxClaims {
  readonly informer: Informer<SandboxClaim>;
  readonly controller: SandboxClaimController;
  readonly janitor: ClaimJanitor;
  readonly metrics: SandboxClaimMetrics;
  readonly #pools: Informer<SandboxWarmPool>;
  readonly #templates: Informer<SandboxTemplate>;
  readonly #inventories: Informer<NodeInventory>;
  readonly #agents: AgentClient;

  constructor(options: SandboxClaimsOptions) {
    this.#pools = options.pools;
    this.#templates = options.templates;
    this.#inventories = options.inventories;
    this.metrics = new SandboxClaimMetrics(options.registry);
    this.informer = createInformer<SandboxClaim>(options.kubeConfig, SandboxClaimType, { logger: options.kubeLogger });
    const logger = options.logger.child({ controller: 'sandboxclaims' });
    const writer = new ClaimWriter(options.kubeConfig, this.metrics);
    this.controller = new SandboxClaimController({
      claims: options.claims,
      cache: this.informer.lister,
      caches: {
        pool: (namespace, name) => options.pools.lister.get(namespace, name),
        template: (namespace, name) => options.templates.lister.get(namespace, name),
      },
      writer,
      metrics: this.metrics,
      logger,
      clock: options.clock,
      ...options.controller,
    });
    const janitorTimeoutMs = options.janitor?.timeoutMs ?? JANITOR_DEFAULTS.timeoutMs;
    this.#agents = new AgentClient({ token: options.token, timeoutMs: janitorTimeoutMs, logger });
    this.janitor = new ClaimJanitor({
      repair: options.repair,
      cache: this.informer.lister,
      cacheSynced: () => this.informer.hasSynced(),
      agents: () => vouchedAgents(options.inventories.lister, options.addresses()),
      // The janitor bounds each call itself (its timeoutMs); the client's own bound is the same.
      nodeClaims: nodeClaimsOf(this.#agents),
      deleteSecret: (ref, owner) => writer.deleteSecretOf(ref, owner),
      metrics: this.metrics,
      logger: logger.child({ subsystem: 'janitor' }),
      clock: options.clock,
      ...options.janitor,
    });
    watchSandboxClaims(this.controller, this.informer, options.pools, options.templates);
  }

  /**
   * On becoming leader: starts once the SandboxClaim, pool and template caches have synced, unless the term ended
   * first; stops when `signal` ends the term.
   */
  async lead(signal: AbortSignal): Promise<void> {
    signal.addEventListener('abort', () => void this.stopLeading(), { once: true });
    try {
      await Promise.all(
        [this.informer, this.#pools, this.#templates, this.#inventories].map((informer) =>
          informer.waitForSync(signal),
        ),
      );
    } catch {
      return; // the term ended before the caches filled
    }
    if (signal.aborted) return;
    this.controller.start();
    this.janitor.start();
  }

  async stopLeading(): Promise<void> {
    await Promise.all([this.controller.stop(), this.janitor.stop()]);
  }

  async close(): Promise<void> {
    await this.stopLeading();
    await this.#agents.close();
  }
}

/** The SandboxClaim controller and the claim janitor as the manager runs them: on the leader only. */
export function sandboxClaimsRunnable(sandboxClaims: SandboxClaims): Runnable {
  return {
    name: 'SandboxClaim controller and janitor',
    needsLeader: true,
    start: (signal) => sandboxClaims.lead(signal),
    close: () => sandboxClaims.close(),
  };
}
