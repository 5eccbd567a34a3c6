// The claim verbs of the node agents (POST /v1/claim, GET /v1/sandboxes
// [?claim_ref=], GET /v1/sandboxes/{id}, renew, release) over HTTP with the
// fleet token. One undici Pool per agent address: a batch sends many claims to
// one node at once, so several keep-alive connections carry them. No retries
// here: the batch worker decides what a failure means (another node, or ask
// the node what happened before trying again).
//
// Answers are read tolerantly (libs/api sandboxd-tolerant): a real sandboxd
// adds fields, may omit `owner_addr` or `claimed_at`, may name its owner as a
// full URL, and an older one ignores `no_redirect` and `?claim_ref=`.
import {
  normalizeOwnerAddr,
  parseSandboxRows,
  redirectAnswerSchema,
  renewResponseSchema,
  rowsOfClaimRef,
  tolerantClaimResponseSchema,
  tolerantSandboxRowSchema,
  type PoolKey,
  type TolerantSandboxRow,
} from '@warmpool/api';
import { messageOf, type Logger } from '@warmpool/runtime';
import { Pool } from 'undici';
import type { TokenSource } from '../token.js';

/** A claim a node served, as warmpool reads it. */
export interface NodeClaim {
  id: string;
  token: string;
  deadline: string;
  /** host:port (a URL the node answered is reduced to it); undefined when the node named none usable. */
  ownerAddr: string | undefined;
}

/** How a node answered a claim it did not serve. */
export type Refusal =
  /** 429: full, at max_claims or draining. Another node may take it. */
  | { kind: 'full'; status: number; message: string }
  /**
   * 200 `{"redirect": [...]}`: the node did not serve it and named peers (it ignored `no_redirect`). Nothing was
   * claimed there: like full, another node may take it, and there is nothing to look up.
   */
  | { kind: 'redirected'; status: number; message: string; candidates: string[] }
  /** Another status: the node refused (bad key, provisioning failed, ...). */
  | { kind: 'refused'; status: number; message: string }
  /** No answer in time, or the connection failed: the node MAY have served it. */
  | { kind: 'unreachable'; message: string };

export type ClaimAnswer = { ok: true; claim: NodeClaim } | { ok: false; refusal: Refusal };

export class AgentCallFailed extends Error {
  override name = 'AgentCallFailed';
  readonly status: number | undefined;

  constructor(message: string, status?: number) {
    super(message);
    this.status = status;
  }
}

export interface AgentClaimsOptions {
  token: TokenSource;
  /** Each call is abandoned after this long (default 2 s). */
  timeoutMs?: number;
  /** Keep-alive connections per agent (default 8). */
  connections?: number;
  /** Where an unreadable list row is reported (once per node). */
  logger?: Logger;
}

export class AgentClaims {
  readonly #token: TokenSource;
  readonly #timeoutMs: number;
  readonly #connections: number;
  readonly #pools = new Map<string, Pool>();
  readonly #logger: Logger | undefined;
  /** Nodes whose unreadable list rows were logged already: one line per node, not one per list. */
  readonly #skipLogged = new Set<string>();
  #closed = false;

  constructor(options: AgentClaimsOptions) {
    this.#token = options.token;
    this.#logger = options.logger;
    this.#timeoutMs = options.timeoutMs ?? 2_000;
    this.#connections = options.connections ?? 8;
  }

  /** `timeoutMs`: this call's deadline (a cold placement's is longer); the agents' timeout when omitted. */
  async claim(
    address: string,
    key: PoolKey,
    ttlSeconds: number,
    claimRef: string,
    timeoutMs = this.#timeoutMs,
  ): Promise<ClaimAnswer> {
    const body = JSON.stringify({
      template: key.template,
      net: key.net,
      size: key.size,
      ttl_seconds: ttlSeconds,
      claim_ref: claimRef,
      // warmpool places claims itself: a node answers for itself, never with peers to retry at.
      no_redirect: true,
    });
    let answer: { status: number; text: string };
    try {
      answer = await this.#call(address, 'POST', '/v1/claim', body, timeoutMs);
    } catch (err) {
      return { ok: false, refusal: { kind: 'unreachable', message: messageOf(err) } };
    }
    if (answer.status === 200) {
      const json = safeJson(answer.text);
      const redirect = redirectAnswerSchema.safeParse(json);
      if (redirect.success) {
        const candidates = redirect.data.redirect;
        return {
          ok: false,
          refusal: {
            kind: 'redirected',
            status: 200,
            message: `the node did not serve the claim and named other nodes (${candidates.join(', ') || 'none'})`,
            candidates,
          },
        };
      }
      const parsed = tolerantClaimResponseSchema.safeParse(json);
      if (parsed.success) {
        const { id, token, deadline, owner_addr: ownerAddr } = parsed.data;
        return { ok: true, claim: { id, token, deadline, ownerAddr: normalizeOwnerAddr(ownerAddr) } };
      }
      // Served, but we cannot read what: ask the node by claim_ref, as after a timeout.
      return {
        ok: false,
        refusal: { kind: 'unreachable', message: `unreadable claim answer: ${answer.text.slice(0, 200)}` },
      };
    }
    const message = errorOf(answer.text) ?? `HTTP ${answer.status}`;
    // The agent sent it to sandboxd and got no answer (502/504 OutcomeUnknown): the node may have served it.
    if (reasonOf(answer.text) === 'OutcomeUnknown')
      return { ok: false, refusal: { kind: 'unreachable', message: `HTTP ${answer.status}: ${message}` } };
    return { ok: false, refusal: { kind: answer.status === 429 ? 'full' : 'refused', status: answer.status, message } };
  }

  /**
   * The live claims recorded under exactly this claim_ref (never tokens). Filtered here too, always: a daemon that
   * ignores the filter answers every claim it holds, and a caller must never take another claim's row for its own.
   */
  async findByClaimRef(address: string, claimRef: string): Promise<TolerantSandboxRow[]> {
    const answer = await this.#call(address, 'GET', `/v1/sandboxes?claim_ref=${encodeURIComponent(claimRef)}`);
    if (answer.status !== 200)
      throw new AgentCallFailed(`GET /v1/sandboxes?claim_ref on ${address}: HTTP ${answer.status}`, answer.status);
    return rowsOfClaimRef(this.#rowsOf(address, answer.text), claimRef);
  }

  /** Every live claim on the node (never tokens); a row lacking what warmpool depends on is skipped (logged once). */
  async list(address: string): Promise<TolerantSandboxRow[]> {
    const answer = await this.#call(address, 'GET', '/v1/sandboxes');
    if (answer.status !== 200)
      throw new AgentCallFailed(`GET /v1/sandboxes on ${address}: HTTP ${answer.status}`, answer.status);
    return this.#rowsOf(address, answer.text);
  }

  /** One claim with its token (root callers see it); undefined when the node does not know it. */
  async get(address: string, id: string): Promise<TolerantSandboxRow | undefined> {
    const answer = await this.#call(address, 'GET', `/v1/sandboxes/${encodeURIComponent(id)}`);
    if (answer.status === 404) return undefined;
    if (answer.status !== 200)
      throw new AgentCallFailed(`GET /v1/sandboxes/${id} on ${address}: HTTP ${answer.status}`, answer.status);
    return tolerantSandboxRowSchema.parse(JSON.parse(answer.text));
  }

  /** Renews with the root token; undefined when the node does not know the sandbox (any more). */
  async renew(address: string, id: string, ttlSeconds: number): Promise<{ deadline: string } | undefined> {
    const answer = await this.#call(
      address,
      'POST',
      `/v1/sandboxes/${encodeURIComponent(id)}/renew`,
      JSON.stringify({ ttl_seconds: ttlSeconds }),
    );
    if (answer.status === 404) return undefined;
    if (answer.status !== 200)
      throw new AgentCallFailed(
        `renew ${id} on ${address}: HTTP ${answer.status}: ${errorOf(answer.text) ?? ''}`,
        answer.status,
      );
    return renewResponseSchema.parse(JSON.parse(answer.text));
  }

  /** Releases with the root token; false when the node did not know it (already gone: done either way). */
  async release(address: string, id: string): Promise<boolean> {
    const answer = await this.#call(address, 'POST', `/v1/sandboxes/${encodeURIComponent(id)}/release`);
    if (answer.status === 204 || answer.status === 200) return true;
    if (answer.status === 404) return false;
    throw new AgentCallFailed(
      `release ${id} on ${address}: HTTP ${answer.status}: ${errorOf(answer.text) ?? ''}`,
      answer.status,
    );
  }

  async close(): Promise<void> {
    this.#closed = true;
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.allSettled(pools.map((pool) => pool.close()));
  }

  async #call(
    address: string,
    method: 'GET' | 'POST',
    path: string,
    body?: string,
    timeoutMs = this.#timeoutMs,
  ): Promise<{ status: number; text: string }> {
    if (this.#closed) throw new AgentCallFailed('closed');
    const token = this.#token();
    if (token === undefined)
      throw new AgentCallFailed('no fleet token configured: not calling node agents (fail-closed)');
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await this.#pool(address).request({
      method,
      path,
      headers,
      body: method === 'POST' ? (body ?? '') : undefined,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
    });
    return { status: response.statusCode, text: await response.body.text() };
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

  #pool(address: string): Pool {
    let pool = this.#pools.get(address);
    if (pool === undefined) {
      pool = new Pool(`http://${address}`, { connections: this.#connections, pipelining: 1, keepAliveTimeout: 30_000 });
      this.#pools.set(address, pool);
    }
    return pool;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function errorOf(text: string): string | undefined {
  const body = safeJson(text);
  if (typeof body === 'object' && body !== null && typeof (body as { error?: unknown }).error === 'string')
    return (body as { error: string }).error;
  return undefined;
}

function reasonOf(text: string): string | undefined {
  const body = safeJson(text);
  if (typeof body === 'object' && body !== null && typeof (body as { reason?: unknown }).reason === 'string')
    return (body as { reason: string }).reason;
  return undefined;
}
