// The ClaimService contract served straight from the real node agents, one
// claim at a time: no batches, no BullMQ, no Redis index (a map in memory).
// It exists so the SandboxClaim controller's specs exercise the controller
// (its apiserver writes, finalizer, expiry, janitor) with real agents while
// the pipeline itself is specified by its own tests; it keeps the contract's
// invariants: the same (namespace, claimRef) answers the same sandbox (asked
// of the nodes by claim_ref), a failed claim leaves nothing claimed.
import {
  claimResponseSchema,
  sandboxListSchema,
  sandboxRowSchema,
  SandboxTemplateType,
  SandboxWarmPoolType,
  type SandboxTemplate,
  type SandboxWarmPool,
} from '@warmpool/api';
import type { KubeConfig } from '@kubernetes/client-node';
import { isNotFound, ResourceClient } from '@warmpool/kube';
import { isDriven, poolKeyOf } from '@warmpool/pool-model';
import { ClaimFailure, type ClaimGrant, type ClaimOrder, type ClaimService } from '../../src/provisioning/claim-service.js';

export interface DirectAgent {
  node: string;
  /** host:port */
  address: string;
}

export class DirectClaims implements ClaimService {
  readonly #pools: ResourceClient<SandboxWarmPool>;
  readonly #templates: ResourceClient<SandboxTemplate>;
  readonly #agents: () => DirectAgent[];
  readonly #token: string;
  readonly #grants = new Map<string, ClaimGrant>();
  #next = 0;
  /** Claims made on nodes, for specs that count. */
  claims = 0;
  /** Awaited before each node claim: a spec holds claims "in their batch" with it. */
  gate: (order: ClaimOrder) => Promise<void> = () => Promise.resolve();

  constructor(kubeConfig: KubeConfig, agents: () => DirectAgent[], token: string) {
    this.#pools = new ResourceClient(kubeConfig, SandboxWarmPoolType);
    this.#templates = new ResourceClient(kubeConfig, SandboxTemplateType);
    this.#agents = agents;
    this.#token = token;
  }

  async claim(order: ClaimOrder): Promise<ClaimGrant> {
    const ref = `${order.namespace}/${order.claimRef}`;
    const existing = await this.lookup(order.namespace, order.claimRef);
    if (existing !== undefined) return existing;
    const pool = await this.#pools.get({ namespace: order.namespace, name: order.warmPool }).catch((err: unknown) => {
      if (isNotFound(err)) throw new ClaimFailure('PoolNotFound', `SandboxWarmPool ${order.namespace}/${order.warmPool} does not exist`);
      throw err;
    });
    const template = await this.#templates.get({ namespace: order.namespace, name: pool.spec.sandboxTemplateRef.name }).catch(() => undefined);
    if (template === undefined || !isDriven(template)) throw new ClaimFailure('NotDriven', `SandboxWarmPool ${order.namespace}/${order.warmPool} is not driven by warmpool`);
    const key = poolKeyOf(template);
    await this.gate(order);
    const agents = this.#agents();
    const start = this.#next++;
    for (let i = 0; i < agents.length; i++) {
      const agent = agents[(start + i) % agents.length] as DirectAgent;
      const res = await this.#call(agent, 'POST', '/v1/claim', { template: key.template, net: key.net, size: key.size, ttl_seconds: order.ttlSeconds, claim_ref: ref });
      if (res.status === 429) {
        await res.body?.cancel();
        continue;
      }
      if (!res.ok) throw new ClaimFailure('NodeRefused', `node ${agent.node} answered ${res.status}: ${await res.text()}`);
      const answer = claimResponseSchema.parse(await res.json());
      this.claims++;
      const grant: ClaimGrant = {
        id: answer.id, token: answer.token, deadline: answer.deadline, ownerAddr: answer.owner_addr, node: agent.node,
        namespace: order.namespace, warmPool: order.warmPool, claimRef: order.claimRef, tier: 'warm', path: order.path,
      };
      this.#grants.set(ref, grant);
      return grant;
    }
    throw new ClaimFailure('NoCapacity', 'every node refused the claim', { retryAfterSeconds: 1 });
  }

  async lookup(namespace: string, idOrClaimRef: string): Promise<ClaimGrant | undefined> {
    const ref = `${namespace}/${idOrClaimRef}`;
    const known = this.#grants.get(ref) ?? [...this.#grants.values()].find((g) => g.namespace === namespace && g.id === idOrClaimRef);
    if (known !== undefined) return known;
    for (const agent of this.#agents()) {
      const res = await this.#call(agent, 'GET', `/v1/sandboxes?claim_ref=${encodeURIComponent(ref)}`);
      const [row] = sandboxListSchema.parse(await res.json()).sandboxes;
      if (row === undefined) continue;
      const full = sandboxRowSchema.parse(await (await this.#call(agent, 'GET', `/v1/sandboxes/${row.id}`)).json());
      const grant: ClaimGrant = {
        id: row.id, token: full.token ?? '', deadline: row.deadline, ownerAddr: agent.address, node: agent.node,
        namespace, warmPool: '', claimRef: idOrClaimRef, tier: 'warm', path: 'crd',
      };
      this.#grants.set(ref, grant);
      return grant;
    }
    return undefined;
  }

  async renew(namespace: string, idOrClaimRef: string, ttlSeconds: number): Promise<{ deadline: string }> {
    const grant = await this.lookup(namespace, idOrClaimRef);
    const agent = this.#agents().find((a) => a.node === grant?.node);
    if (grant === undefined || agent === undefined) throw new ClaimFailure('ClaimNotFound', 'no such claim');
    const res = await this.#call(agent, 'POST', `/v1/sandboxes/${grant.id}/renew`, { ttl_seconds: ttlSeconds });
    if (res.status === 404) {
      this.#grants.delete(`${namespace}/${grant.claimRef}`);
      throw new ClaimFailure('ClaimNotFound', 'the sandbox is gone');
    }
    const { deadline } = (await res.json()) as { deadline: string };
    grant.deadline = deadline;
    return { deadline };
  }

  async release(namespace: string, idOrClaimRef: string): Promise<boolean> {
    const grant = await this.lookup(namespace, idOrClaimRef);
    if (grant === undefined) return false;
    this.#grants.delete(`${namespace}/${grant.claimRef}`);
    const agent = this.#agents().find((a) => a.node === grant.node);
    if (agent === undefined) return false;
    const res = await this.#call(agent, 'POST', `/v1/sandboxes/${grant.id}/release`);
    await res.body?.cancel();
    return res.ok;
  }

  notReadyReasons(): string[] {
    return [];
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  #call(agent: DirectAgent, method: string, path: string, body?: unknown): Promise<Response> {
    return fetch(`http://${agent.address}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.#token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  }
}
