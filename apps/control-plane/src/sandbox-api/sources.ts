// What the Sandbox API serves from: the view (fed by the NodeInventory
// informer and, with provisioning, the claim index's event stream and its
// records), and the reader for get, which falls back to the claim index and
// the owning node (asked with the fleet token, only at an address its Node
// vouches for).
import type { NodeInventory, SandboxClaim, SandboxTemplate, SandboxWarmPool } from '@warmpool/api';
import type { Informer } from '@warmpool/kube';
import { closeInOrder, type Logger } from '@warmpool/runtime';
import { AgentClient } from '../agents/client.js';
import type { AddressCheck } from '../nodes/addresses.js';
import type { ClaimGrant } from '../provisioning/claim-service.js';
import type { ProvisioningPipeline } from '../provisioning/pipeline.js';
import type { RedisSettings } from '../redis/connection.js';
import type { TokenSource } from '../agents/token.js';
import { ClaimFeed } from './claim-feed.js';
import { enrichFromIndex } from './index-enricher.js';
import { followInventories } from './inventory-feed.js';
import { SandboxReader } from './reader.js';
import { SandboxView } from './view.js';

export interface SandboxSourcesOptions {
  inventories: Informer<NodeInventory>;
  pools: Informer<SandboxWarmPool>;
  templates: Informer<SandboxTemplate>;
  /**
   * With provisioning: create / delete, get through the claim index, and the claim events; the SandboxClaim cache
   * tells delete which sandboxes are SandboxClaims'.
   */
  claims?: {
    pipeline: ProvisioningPipeline;
    /** The claim pipeline's Redis, for the claim feed. */
    redis: RedisSettings;
    eventsKey: string;
    sandboxClaims: Informer<SandboxClaim>;
  };
  /** The fleet token, to ask a node about a claim. */
  token: TokenSource;
  /** The driver's address check: a node is asked (with the fleet token) only at an address its Node vouches for. */
  addresses: () => AddressCheck;
  /** Timeout of asking a node during get (default 1 s). */
  nodeTimeoutMs?: number;
  logger: Logger;
}

export class SandboxSources {
  readonly view = new SandboxView();
  readonly reader: SandboxReader;
  readonly #options: SandboxSourcesOptions;
  readonly #feed: ClaimFeed | undefined;
  readonly #agents: AgentClient;
  readonly #stopInventories: () => void;
  readonly #stopEnriching: (() => void) | undefined;
  #sweeper: NodeJS.Timeout | undefined;

  constructor(options: SandboxSourcesOptions) {
    this.#options = options;
    const { view } = this;
    const { logger } = options;
    this.#stopInventories = followInventories({
      view,
      inventories: options.inventories,
      pools: options.pools,
      templates: options.templates,
    });
    const claims = options.claims;
    this.#feed =
      claims === undefined
        ? undefined
        : new ClaimFeed({
            redis: claims.redis,
            key: claims.eventsKey,
            view,
            logger: logger.child({ component: 'claim-feed' }),
          });
    this.#agents = new AgentClient({
      token: options.token,
      timeoutMs: options.nodeTimeoutMs ?? 1_000,
      connections: 2,
      logger,
    });
    const pipeline = claims?.pipeline;
    const lookup =
      pipeline === undefined
        ? undefined
        : (namespace: string, name: string) => lookupSandbox(pipeline, namespace, name);
    this.reader = new SandboxReader({
      view,
      ...(lookup !== undefined ? { lookup } : {}),
      // Filtered by id by the reader: the node's claim_ref names the owner, which the Sandbox's name alone does not.
      askNode: async (node) => this.#agents.list(this.#addressOf(node)),
    });
    this.#stopEnriching =
      lookup === undefined
        ? undefined
        : enrichFromIndex({ view, lookup, logger: logger.child({ component: 'index-enricher' }) });
  }

  /** Why list/watch/get cannot be answered yet (caches, claim events); empty when they can. */
  notReadyReasons(): string[] {
    const { inventories, pools, templates } = this.#options;
    const reasons: string[] = [];
    for (const informer of [inventories, pools, templates] as const) {
      if (!informer.hasSynced()) reasons.push(`${informer.type.kind} cache not synced yet`);
    }
    const feed = this.#feed;
    if (feed !== undefined && !feed.replayed)
      reasons.push(`claim events not read yet${feed.failing !== undefined ? `: ${feed.failing}` : ''}`);
    return reasons;
  }

  start(): void {
    this.#feed?.start();
    this.#sweeper = setInterval(() => this.view.sweep(), 1_000);
    this.#sweeper.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    await closeInOrder(
      'the Sandbox sources',
      [
        ['claim feed', () => this.#feed?.close()],
        ['inventory feed', () => this.#stopInventories()],
        ['index enricher', () => this.#stopEnriching?.()],
        ['agents', () => this.#agents.close()],
      ],
      this.#options.logger,
    );
  }

  /** The address a node is asked at: its NodeInventory's, once its Node vouches for it. */
  #addressOf(node: string): string {
    const address = this.#options.inventories.lister.get(node)?.spec?.address || undefined;
    if (address === undefined) throw new Error(`node ${node} has no NodeInventory`);
    const problem = this.#options.addresses()(node, address);
    if (problem !== undefined) throw new Error(`node ${node} is not asked: ${problem}`);
    return address;
  }
}

/** A Sandbox is an HTTP claim or a SandboxClaim's sandbox of that name (the HTTP key space first). */
async function lookupSandbox(
  pipeline: ProvisioningPipeline,
  namespace: string,
  name: string,
): Promise<ClaimGrant | undefined> {
  // Its owner address and tier are the index's: a replica whose Redis is not connected yet asks again later.
  const options = { indexRequired: true };
  return (
    (await pipeline.lookup({ namespace, door: 'http' }, name, options)) ??
    pipeline.lookup({ namespace, door: 'crd' }, name, options)
  );
}
