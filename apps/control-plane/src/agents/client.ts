// The one client of the node agents, over HTTP with the fleet token: the
// driver's verbs (PUT /v1/pools, GET /v1/info) and the claim verbs (claim,
// list, get, renew, release). Every failure is an AgentCallError (errors.ts).
//
// Connections, per agent address: for the driver, two undici Clients of one
// keep-alive connection each, one for pushes and one for probes (pushes to a
// node never overlap, and a push never waits behind a probe); for claims, a
// Pool of several (a batch sends many claims to one node at once).
//
// Retries: only setPools retries, with exponential backoff and jitter, on
// network errors, 5xx and 429 — never on other 4xx, and never on a push that
// was sent and got no answer (its own timeout, or the agent's 502/504
// OutcomeUnknown): the node is still on it, and the next reconcile pushes
// again. Claim calls never retry: the batch worker decides what a failure
// means (another node, or ask the node what happened first).
//
// Claims made to one agent in the same event-loop turn go as one
// POST /v1/claims (claim-coalescer.ts); each caller gets its own answer.
import {
  nodeInfoSchema,
  parseSandboxRows,
  renewResponseSchema,
  rowsOfClaimRef,
  tolerantSandboxRowSchema,
  type NodeInfo,
  type PoolKey,
  type PoolTarget,
  type TolerantSandboxRow,
} from '@warmpool/api';
import { Backoff, sleep } from '@warmpool/kube';
import type { Logger } from '@warmpool/runtime';
import type { Dispatcher } from 'undici';
import type { TokenSource } from './token.js';
import { appliedGenerationIn, claimBody, errorText, jsonOf, reasonText, type Answer } from './answers.js';
import type { ClaimAnswer } from './answers.js';
import { ClaimCoalescer } from './claim-coalescer.js';
import { AgentConnections, type Exchange, type Purpose } from './connections.js';
import { AgentCallError, NoTokenError, NotLeadingError, StaleGenerationError } from './errors.js';
import type { AgentNode, CallOptions, PoolSetter } from './pool-setter.js';

export type { ClaimAnswer, NodeClaim, Refusal } from './answers.js';

/** A push waits this long by default: a real sandboxd answers once the warm VMs it trims are destroyed. */
export const DEFAULT_PUSH_TIMEOUT_MS = 60_000;

export interface AgentClientOptions {
  token: TokenSource;
  /** Each probe and claim call is abandoned after this long (default 2 s). */
  timeoutMs?: number;
  /** Each push attempt is abandoned after this long (default 60 s, never below timeoutMs). */
  pushTimeoutMs?: number;
  /** Attempts per setPools call, the first included (default 3). */
  attempts?: number;
  /** First setPools retry delay (default 100 ms), doubling, with jitter. */
  retryInitialMs?: number;
  retryMaxMs?: number;
  /** Keep-alive connections per agent for claim calls (default 8). */
  connections?: number;
  /** Where an unreadable list row is reported (once per node), and an agent without POST /v1/claims. */
  logger?: Logger;
  /** How long an agent that answered POST /v1/claims 404/405 is sent single claims (default 60 s). */
  singleClaimsForMs?: number;
}

/** Per call: `signal` aborts it, `timeoutMs` replaces the client's timeout (a cold placement's is longer). */
export interface ClaimCallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

export class AgentClient implements PoolSetter {
  readonly #token: TokenSource;
  readonly #timeoutMs: number;
  readonly #pushTimeoutMs: number;
  readonly #attempts: number;
  readonly #retry: { initialMs: number; maxMs: number };
  readonly #connections: AgentConnections;
  readonly #logger: Logger | undefined;
  /** Nodes whose unreadable list rows were logged already: one line per node, not one per list. */
  readonly #skipLogged = new Set<string>();
  readonly #claims: ClaimCoalescer;

  constructor(options: AgentClientOptions) {
    this.#token = options.token;
    this.#logger = options.logger;
    this.#timeoutMs = options.timeoutMs ?? 2_000;
    this.#pushTimeoutMs = Math.max(this.#timeoutMs, options.pushTimeoutMs ?? DEFAULT_PUSH_TIMEOUT_MS);
    this.#attempts = Math.max(1, options.attempts ?? 3);
    this.#retry = { initialMs: options.retryInitialMs ?? 100, maxMs: options.retryMaxMs ?? 2_000 };
    this.#connections = new AgentConnections({
      connectTimeoutMs: this.#timeoutMs,
      timeoutOf: (purpose) => (purpose === 'push' ? this.#pushTimeoutMs : this.#timeoutMs),
      claimConnections: options.connections ?? 8,
    });
    this.#claims = new ClaimCoalescer({
      send: (address, path, body, timeoutMs, onLine) =>
        this.#claimCall(address, 'POST', path, body, { timeoutMs, onLine }),
      singleForMs: options.singleClaimsForMs,
      logger: options.logger,
    });
  }

  /** `PUT /v1/pools`: the node's whole desired set, stamped with `generation`; retried (see the header). */
  async setPools(
    node: AgentNode,
    generation: number,
    pools: readonly PoolTarget[],
    options: CallOptions = {},
  ): Promise<NodeInfo> {
    const body = JSON.stringify({ generation, pools });
    const backoff = new Backoff({ ...this.#retry, factor: 2, jitter: 0.5 });
    for (let attempt = 1; ; attempt++) {
      if (options.proceed?.() === false) throw new NotLeadingError(node.name);
      try {
        const answer = await this.#driverCall(node, 'push', 'PUT', '/v1/pools', body, options.signal);
        if (answer.status === 409) {
          const applied = appliedGenerationIn(answer.text);
          if (applied !== undefined) throw new StaleGenerationError(node.name, generation, applied);
        }
        return this.#infoFrom(node, answer);
      } catch (err) {
        const retriable = err instanceof AgentCallError && err.retriable;
        if (!retriable || attempt >= this.#attempts || options.signal?.aborted === true) throw err;
      }
      await sleep(backoff.next(), options.signal);
    }
  }

  /** `GET /v1/info`: one attempt, no retry (it is the periodic probe). */
  async info(node: AgentNode, options: CallOptions = {}): Promise<NodeInfo> {
    return this.#infoFrom(node, await this.#driverCall(node, 'probe', 'GET', '/v1/info', undefined, options.signal));
  }

  /**
   * A claim under `claimRef`, sent with the others made to `address` in this turn (POST /v1/claims, or POST /v1/claim
   * alone); every outcome is an answer, never a throw.
   */
  claim(
    address: string,
    key: PoolKey,
    ttlSeconds: number,
    claimRef: string,
    timeoutMs = this.#timeoutMs,
  ): Promise<ClaimAnswer> {
    return this.#claims.claim(address, claimBody(key, ttlSeconds, claimRef), timeoutMs);
  }

  /**
   * The live claims recorded under exactly this claim_ref (never tokens). Filtered here too, always: a daemon that
   * ignores the filter answers every claim it holds, and a caller must never take another claim's row for its own.
   */
  async findByClaimRef(address: string, claimRef: string): Promise<TolerantSandboxRow[]> {
    const path = `/v1/sandboxes?claim_ref=${encodeURIComponent(claimRef)}`;
    const answer = await this.#claimCall(address, 'GET', path);
    if (answer.status !== 200) throw this.#failed(address, 'GET /v1/sandboxes?claim_ref', answer);
    return rowsOfClaimRef(this.#rowsOf(address, answer.text), claimRef);
  }

  /** Every live claim on the node (never tokens); a row lacking what warmpool depends on is skipped (logged once). */
  async list(address: string, options: ClaimCallOptions = {}): Promise<TolerantSandboxRow[]> {
    const answer = await this.#claimCall(address, 'GET', '/v1/sandboxes', undefined, options);
    if (answer.status !== 200) throw this.#failed(address, 'GET /v1/sandboxes', answer);
    return this.#rowsOf(address, answer.text);
  }

  /** One claim with its token (root callers see it); undefined when the node does not know it. */
  async get(address: string, id: string): Promise<TolerantSandboxRow | undefined> {
    const answer = await this.#claimCall(address, 'GET', `/v1/sandboxes/${encodeURIComponent(id)}`);
    if (answer.status === 404) return undefined;
    if (answer.status !== 200) throw this.#failed(address, `GET /v1/sandboxes/${id}`, answer);
    return tolerantSandboxRowSchema.parse(JSON.parse(answer.text));
  }

  /** Renews with the root token; undefined when the node does not know the sandbox (any more). */
  async renew(address: string, id: string, ttlSeconds: number): Promise<{ deadline: string } | undefined> {
    const path = `/v1/sandboxes/${encodeURIComponent(id)}/renew`;
    const answer = await this.#claimCall(address, 'POST', path, JSON.stringify({ ttl_seconds: ttlSeconds }));
    if (answer.status === 404) return undefined;
    if (answer.status !== 200) throw this.#failed(address, `renew ${id}`, answer);
    return renewResponseSchema.parse(JSON.parse(answer.text));
  }

  /** Releases with the root token; false when the node did not know it (already gone: done either way). */
  async release(address: string, id: string, options: ClaimCallOptions = {}): Promise<boolean> {
    const path = `/v1/sandboxes/${encodeURIComponent(id)}/release`;
    const answer = await this.#claimCall(address, 'POST', path, undefined, options);
    if (answer.status === 204 || answer.status === 200) return true;
    if (answer.status === 404) return false;
    throw this.#failed(address, `release ${id}`, answer);
  }

  /** Drops the connections kept for an address no node uses any more. */
  forget(address: string): void {
    this.#connections.forget(address);
    this.#claims.forget(address);
  }

  async close(): Promise<void> {
    await this.#connections.close();
  }

  #infoFrom(node: AgentNode, answer: Answer): NodeInfo {
    if (answer.status < 200 || answer.status >= 300) {
      const reason = errorText(answer.text) ?? `HTTP ${answer.status}`;
      // OutcomeUnknown: the agent sent it to sandboxd, which did not answer in time; it may still be applying it.
      const outcomeUnknown = reasonText(answer.text) === 'OutcomeUnknown';
      throw new AgentCallError(node.name, `answered ${answer.status}: ${reason}`, {
        status: answer.status,
        retriable: (answer.status >= 500 || answer.status === 429) && !outcomeUnknown,
      });
    }
    const parsed = nodeInfoSchema.safeParse(jsonOf(answer.text));
    if (!parsed.success)
      throw new AgentCallError(
        node.name,
        `answered a body that is not node info: ${parsed.error.issues[0]?.message ?? 'invalid'}`,
        { status: answer.status, retriable: false },
      );
    return parsed.data;
  }

  /**
   * During a token rotation an agent may not have read the new token yet (or has dropped the old one): its 401 is
   * worth one try with the other token. A 401 changed nothing, so even a push is safe to send again.
   */
  async #driverCall(
    node: AgentNode,
    purpose: Purpose,
    method: Dispatcher.HttpMethod,
    path: string,
    body: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Answer> {
    const rotation = this.#token.rotation;
    const token = rotation !== undefined ? rotation.preferred : this.#token();
    if (token === undefined) throw new NoTokenError(node.name);
    const send = (bearer: string): Promise<Answer> =>
      this.#connections.send(node, purpose, { method, path, body, token: bearer, signal });
    const answer = await send(token);
    if (rotation === undefined) return answer;
    const other = answer.status === 401 ? rotation.alternateTo(token) : undefined;
    if (other === undefined) {
      if (answer.status !== 401) rotation.worked(token);
      return answer;
    }
    const second = await send(other);
    if (second.status !== 401) rotation.worked(other);
    return second;
  }

  async #claimCall(
    address: string,
    method: 'GET' | 'POST',
    path: string,
    body?: string,
    options: ClaimCallOptions & Pick<Exchange, 'onLine'> = {},
  ): Promise<Answer> {
    const token = this.#token();
    if (token === undefined) throw new NoTokenError(address);
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const { signal, onLine } = options;
    return this.#connections.sendClaim(address, { method, path, body, token, timeoutMs, signal, onLine });
  }

  #failed(address: string, what: string, answer: Answer): AgentCallError {
    const error = errorText(answer.text);
    const message = `${what}: HTTP ${answer.status}${error !== undefined ? `: ${error}` : ''}`;
    return new AgentCallError(address, message, { status: answer.status });
  }

  #rowsOf(address: string, text: string): TolerantSandboxRow[] {
    const { rows, skipped, firstProblem } = parseSandboxRows(JSON.parse(text));
    if (skipped > 0 && !this.#skipLogged.has(address)) {
      this.#skipLogged.add(address);
      this.#logger?.warn('a node listed claims warmpool cannot read (no id, deadline or key): skipped', {
        address,
        skipped,
        problem: firstProblem,
      });
    }
    return rows;
  }
}
