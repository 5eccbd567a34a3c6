// Where a live claim is, for get, renew and release from any replica: the
// claim index first (one Redis round trip), else the nodes, which are the
// source of truth. A claim the index lost (Redis restarted empty, a key that
// expired before a renewal made at the node) is found on its node by its
// claim_ref or id, recorded again, and served as before; an absence in Redis
// never means "released".
import {
  claimNameOf,
  parseNodeClaimRef,
  type ClaimRecord,
  type NodeClaimOwner,
  type TolerantSandboxRow,
} from '@warmpool/api';
import { messageOf, type Logger } from '@warmpool/runtime';
import type { AgentClient } from '../agents/client.js';
import type { AgentAddress } from '../nodes/addresses.js';
import type { ClaimIndex } from './claim-index.js';
import { ClaimFailure, type ClaimGrant, type ClaimScope, type LookupOptions } from './claim-service.js';

export interface ClaimDirectoryOptions {
  index: ClaimIndex;
  agents: AgentClient;
  /** Every node with an agent address. */
  nodes(): readonly AgentAddress[];
  /** A node's sandbox address, as its NodeInventory publishes it. */
  ownerAddrOf(node: string): string | undefined;
  /** Nodes asked at once when the index does not know a claim (default 16). */
  concurrency?: number;
  logger: Logger;
}

export class ClaimDirectory {
  readonly #options: ClaimDirectoryOptions;

  constructor(options: ClaimDirectoryOptions) {
    this.#options = options;
  }

  /** The live claim by id or claimRef within its scope; undefined when no node holds it. */
  async lookup(scope: ClaimScope, idOrClaimRef: string, options: LookupOptions = {}): Promise<ClaimGrant | undefined> {
    let indexReachable = true;
    try {
      const known = await this.#options.index.lookup(scope, idOrClaimRef);
      if (known !== undefined) return await this.#confirmedPastDeadline(known);
    } catch (err) {
      if (options.indexRequired === true) throw err;
      indexReachable = false;
      this.#options.logger.debug('claim index not reachable: asking the nodes', { err: messageOf(err) });
    }
    if (options.indexOnly === true) return undefined;
    const found = await this.#findOnNodes(scope, idOrClaimRef);
    if (found !== undefined && indexReachable)
      await this.#options.index
        .record(found, '')
        .catch((err: unknown) => this.#options.logger.debug('could not record a claim found on its node', { err }));
    return found;
  }

  /** Renews on its node; the index follows (best effort: the node's deadline is the truth). */
  async renew(scope: ClaimScope, idOrClaimRef: string, ttlSeconds: number): Promise<{ deadline: string }> {
    const grant = await this.#require(scope, idOrClaimRef);
    const address = this.#addressOf(grant.node);
    let renewed: { deadline: string } | undefined;
    try {
      renewed = await this.#options.agents.renew(address, grant.id, ttlSeconds);
    } catch (err) {
      throw new ClaimFailure('Timeout', `node ${grant.node} did not renew: ${messageOf(err)}`, { cause: err });
    }
    if (renewed === undefined) {
      await this.#options.index.drop(grant).catch(() => undefined);
      throw new ClaimFailure(
        'ClaimNotFound',
        `claim ${scope.namespace}/${idOrClaimRef} is gone from node ${grant.node}`,
      );
    }
    await this.#options.index
      .renewed(grant, renewed.deadline)
      .catch((err: unknown) =>
        this.#options.logger.warn('renewed on the node but not in the index', { id: grant.id, err }),
      );
    return renewed;
  }

  /** Releases on its node and forgets it; false when no node holds it. */
  async release(scope: ClaimScope, idOrClaimRef: string): Promise<boolean> {
    const grant = await this.lookup(scope, idOrClaimRef);
    if (grant === undefined) return false;
    try {
      await this.#options.agents.release(this.#addressOf(grant.node), grant.id);
    } catch (err) {
      throw new ClaimFailure('Timeout', `node ${grant.node} did not release: ${messageOf(err)}`, { cause: err });
    }
    await this.#options.index.drop(grant).catch(() => undefined);
    return true;
  }

  /**
   * A record past its deadline is confirmed with its node: renewed there (its
   * own token renews it), it is recorded again with the node's deadline; gone,
   * it is dropped. A node that cannot be asked leaves the record as it is.
   */
  async #confirmedPastDeadline(record: ClaimRecord): Promise<ClaimRecord | undefined> {
    if (Date.parse(record.deadline) > Date.now() || record.cluster !== undefined) return record;
    const agent = this.#options.nodes().find((n) => n.node === record.node);
    if (agent === undefined) return record;
    let row: TolerantSandboxRow | undefined;
    try {
      row = await this.#options.agents.get(agent.address, record.id);
    } catch {
      return record;
    }
    if (row === undefined) {
      await this.#options.index.drop(record).catch(() => undefined);
      return undefined;
    }
    const renewed = { ...record, deadline: row.deadline };
    await this.#options.index.record(renewed, '').catch(() => undefined);
    return renewed;
  }

  /**
   * A node's claim as the index records it, from the node alone (its row,
   * the token from GET /v1/sandboxes/{id}); undefined when the node no longer
   * holds it or the claim_ref is not warmpool's.
   */
  async recordOf(agent: AgentAddress, row: TolerantSandboxRow): Promise<ClaimRecord | undefined> {
    const owner = parseNodeClaimRef(row.claim_ref);
    if (owner === undefined) return undefined;
    const full = await this.#options.agents.get(agent.address, row.id);
    if (full?.token === undefined) return undefined;
    return {
      id: row.id,
      token: full.token,
      deadline: full.deadline,
      ownerAddr: this.#options.ownerAddrOf(agent.node) ?? '',
      node: agent.node,
      namespace: owner.namespace,
      // A SandboxClaim's pool is in its spec, not on the node.
      warmPool: owner.door === 'crd' ? '' : owner.pool,
      claimRef: claimNameOf(owner).name,
      tier: 'warm',
      key: row.key,
      door: owner.door,
      owner: markOf(owner),
      ...(owner.door === 'fed' ? { peer: owner.peer } : {}),
    };
  }

  async #require(scope: ClaimScope, idOrClaimRef: string): Promise<ClaimGrant> {
    const grant = await this.lookup(scope, idOrClaimRef);
    if (grant === undefined)
      throw new ClaimFailure('ClaimNotFound', `claim ${scope.namespace}/${idOrClaimRef} not found`);
    return grant;
  }

  #addressOf(node: string): string {
    const agent = this.#options.nodes().find((n) => n.node === node);
    if (agent === undefined)
      throw new ClaimFailure('Unavailable', `node ${node} has no NodeInventory with an address`, {
        retryAfterSeconds: 1,
      });
    return agent.address;
  }

  /** Every node listed (a bounded number at once); the first row of the scope named by id or claimRef. */
  async #findOnNodes(scope: ClaimScope, idOrClaimRef: string): Promise<ClaimRecord | undefined> {
    const nodes = [...this.#options.nodes()];
    const silent: string[] = [];
    let found: { agent: AgentAddress; row: TolerantSandboxRow } | undefined;
    const lane = async (): Promise<void> => {
      for (let agent = nodes.shift(); agent !== undefined && found === undefined; agent = nodes.shift()) {
        try {
          const row = (await this.#options.agents.list(agent.address)).find((r) => matches(r, scope, idOrClaimRef));
          if (row !== undefined) found ??= { agent, row };
        } catch {
          silent.push(agent.node);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#options.concurrency ?? 16, nodes.length) }, lane));
    if (found !== undefined) return this.recordOf(found.agent, found.row);
    if (silent.length > 0)
      throw new ClaimFailure('Unavailable', `nodes ${silent.join(', ')} did not answer; the claim may be there`, {
        retryAfterSeconds: 1,
      });
    return undefined;
  }
}

function matches(row: TolerantSandboxRow, scope: ClaimScope, idOrClaimRef: string): boolean {
  const owner = parseNodeClaimRef(row.claim_ref);
  if (owner === undefined || owner.door !== scope.door || owner.namespace !== scope.namespace) return false;
  if (owner.door === 'fed' && owner.peer !== scope.peer) return false;
  return row.id === idOrClaimRef || claimNameOf(owner).name === idOrClaimRef;
}

export function markOf(owner: NodeClaimOwner): string {
  switch (owner.door) {
    case 'crd':
      return owner.uid;
    case 'http':
      return owner.owner;
    case 'fed':
      return owner.peer;
  }
}
