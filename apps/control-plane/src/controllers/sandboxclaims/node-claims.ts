// What the janitor asks each node agent: the claims it holds
// (`GET /v1/sandboxes`, root = fleet token, never tokens in the answer), and
// the release of one of them (`POST /v1/sandboxes/{id}/release`, 404 = done).
import { parseSandboxRows, type TolerantSandboxRow } from '@warmpool/api';
import type { Logger } from '@warmpool/runtime';
import type { TokenSource } from '../../token.js';

export interface AgentAddress {
  node: string;
  /** host:port */
  address: string;
}

export interface NodeClaims {
  list(agent: AgentAddress, signal: AbortSignal): Promise<TolerantSandboxRow[]>;
  release(agent: AgentAddress, id: string, signal: AbortSignal): Promise<void>;
}

export class AgentCallFailed extends Error {
  override name = 'AgentCallFailed';
}

export class HttpNodeClaims implements NodeClaims {
  readonly #token: TokenSource;
  readonly #logger: Logger | undefined;
  /** Nodes whose unreadable rows were logged already: one line per node. */
  readonly #skipLogged = new Set<string>();

  constructor(token: TokenSource, logger?: Logger) {
    this.#token = token;
    this.#logger = logger;
  }

  async list(agent: AgentAddress, signal: AbortSignal): Promise<TolerantSandboxRow[]> {
    const res = await fetch(`http://${agent.address}/v1/sandboxes`, { headers: this.#headers(), signal });
    if (!res.ok) {
      await res.body?.cancel();
      throw new AgentCallFailed(`GET /v1/sandboxes on ${agent.node} answered ${res.status}`);
    }
    // Row by row: one row without what warmpool needs (id, deadline, key) never hides the node's other claims.
    const { rows, skipped, firstProblem } = parseSandboxRows(await res.json());
    if (skipped > 0 && !this.#skipLogged.has(agent.node)) {
      this.#skipLogged.add(agent.node);
      this.#logger?.warn('a node listed claims warmpool cannot read (no id, deadline or key): skipped', {
        node: agent.node,
        skipped,
        problem: firstProblem,
      });
    }
    return rows;
  }

  async release(agent: AgentAddress, id: string, signal: AbortSignal): Promise<void> {
    const res = await fetch(`http://${agent.address}/v1/sandboxes/${encodeURIComponent(id)}/release`, {
      method: 'POST',
      headers: this.#headers(),
      signal,
    });
    await res.body?.cancel();
    if (!res.ok && res.status !== 404)
      throw new AgentCallFailed(`release of ${id} on ${agent.node} answered ${res.status}`);
  }

  #headers(): Record<string, string> {
    const token = this.#token();
    if (token === undefined) throw new AgentCallFailed('no fleet token configured');
    return { authorization: `Bearer ${token}` };
  }
}
