// The PoolSetter over HTTP: per agent address, two undici Clients of one
// keep-alive connection each, one for pushes and one for probes; a timeout per
// attempt (a push's generous: a real sandboxd answers PUT /v1/pools only once
// the VMs it trims are gone), and retries with exponential backoff and jitter
// on network errors, 5xx and 429 — never on other 4xx, which another attempt
// would not change, and never on a push that was sent and got no answer (its
// own timeout, or the agent's 502/504 OutcomeUnknown): the node is still
// working on it, so resending at once only queues more of the same behind it;
// the next reconcile pushes again. A 409 is the agent refusing a stale generation.
//
// Why Clients and not an undici Pool: pushes to one node never overlap (one
// lane per node), so one connection carries them all, and a connection of its
// own for probes means a push never waits behind a probe. A Pool would give
// the same two connections but holds a fixed-size request queue per node even
// idle: heap that grows with the fleet for nothing (docs/benchmarks.md, design notes).
import { nodeInfoSchema, type NodeInfo, type PoolTarget } from '@warmpool/api';
import { Backoff, sleep } from '@warmpool/kube';
import { messageOf } from '@warmpool/runtime';
import { Client, type Dispatcher } from 'undici';
import type { TokenSource } from '../token.js';
import {
  AgentCallError,
  NoTokenError,
  NotLeadingError,
  StaleGenerationError,
  type AgentNode,
  type CallOptions,
  type PoolSetter,
} from './pool-setter.js';

export interface HttpPoolSetterOptions {
  token: TokenSource;
  /** Each probe attempt is abandoned after this long (default 2 s). */
  timeoutMs?: number;
  /** Each push attempt is abandoned after this long (default 60 s, never below timeoutMs). */
  pushTimeoutMs?: number;
  /** Attempts per setPools call, the first included (default 3). */
  attempts?: number;
  /** First retry delay (default 100 ms), doubling, with jitter. */
  retryInitialMs?: number;
  retryMaxMs?: number;
}

/** A push waits this long by default: a real sandboxd answers once the warm VMs it trims are destroyed. */
export const DEFAULT_PUSH_TIMEOUT_MS = 60_000;

/** The two connections to one agent. */
interface AgentConnections {
  push: Client | undefined;
  probe: Client | undefined;
}

type Purpose = keyof AgentConnections;

export class HttpPoolSetter implements PoolSetter {
  readonly #token: TokenSource;
  readonly #timeoutMs: number;
  readonly #pushTimeoutMs: number;
  readonly #attempts: number;
  readonly #retryInitialMs: number;
  readonly #retryMaxMs: number;
  readonly #agents = new Map<string, AgentConnections>();
  #closed = false;

  constructor(options: HttpPoolSetterOptions) {
    this.#token = options.token;
    this.#timeoutMs = options.timeoutMs ?? 2_000;
    this.#pushTimeoutMs = Math.max(this.#timeoutMs, options.pushTimeoutMs ?? DEFAULT_PUSH_TIMEOUT_MS);
    this.#attempts = Math.max(1, options.attempts ?? 3);
    this.#retryInitialMs = options.retryInitialMs ?? 100;
    this.#retryMaxMs = options.retryMaxMs ?? 2_000;
  }

  async setPools(
    node: AgentNode,
    generation: number,
    pools: readonly PoolTarget[],
    options: CallOptions = {},
  ): Promise<NodeInfo> {
    const body = JSON.stringify({ generation, pools });
    const backoff = new Backoff({ initialMs: this.#retryInitialMs, maxMs: this.#retryMaxMs, factor: 2, jitter: 0.5 });
    for (let attempt = 1; ; attempt++) {
      if (options.proceed?.() === false) throw new NotLeadingError(`not leading: nothing pushed to node ${node.name}`);
      try {
        const answer = await this.#call(node, 'push', 'PUT', '/v1/pools', body, options.signal);
        if (answer.status === 409) {
          const applied = appliedGenerationIn(answer.json);
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

  async info(node: AgentNode, options: CallOptions = {}): Promise<NodeInfo> {
    return this.#infoFrom(node, await this.#call(node, 'probe', 'GET', '/v1/info', undefined, options.signal));
  }

  forget(address: string): void {
    const agent = this.#agents.get(address);
    if (agent === undefined) return;
    this.#agents.delete(address);
    for (const client of [agent.push, agent.probe]) void client?.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const clients = [...this.#agents.values()].flatMap((agent) => [agent.push, agent.probe]);
    this.#agents.clear();
    // In-flight calls were aborted by the caller's signal; destroy() does not wait for stragglers.
    await Promise.all(clients.map((client) => client?.destroy().catch(() => undefined)));
  }

  #infoFrom(node: AgentNode, answer: Answer): NodeInfo {
    if (answer.status < 200 || answer.status >= 300) {
      const reason = errorText(answer.json) ?? `HTTP ${answer.status}`;
      // OutcomeUnknown: the agent sent it to sandboxd, which did not answer in time; it may still be applying it.
      const outcomeUnknown = reasonText(answer.json) === 'OutcomeUnknown';
      throw new AgentCallError(node.name, `answered ${answer.status}: ${reason}`, {
        status: answer.status,
        retriable: (answer.status >= 500 || answer.status === 429) && !outcomeUnknown,
      });
    }
    const parsed = nodeInfoSchema.safeParse(answer.json);
    if (!parsed.success)
      throw new AgentCallError(
        node.name,
        `answered a body that is not node info: ${parsed.error.issues[0]?.message ?? 'invalid'}`,
        { status: answer.status, retriable: false },
      );
    return parsed.data;
  }

  async #call(
    node: AgentNode,
    purpose: Purpose,
    method: Dispatcher.HttpMethod,
    path: string,
    body: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Answer> {
    const rotation = this.#token.rotation;
    const token = rotation !== undefined ? rotation.preferred : this.#token();
    if (token === undefined) throw new NoTokenError('no fleet token: refusing to call node agents unauthenticated');
    if (this.#closed) throw new AgentCallError(node.name, 'the pool setter is closed', { retriable: false });
    const answer = await this.#send(node, purpose, method, path, body, token, signal);
    if (rotation === undefined) return answer;
    // During a rotation an agent may not have read the new token yet (or has
    // dropped the old one): its 401 is worth one try with the other token. A
    // 401 changed nothing, so even a push is safe to send again.
    const other = answer.status === 401 ? rotation.alternateTo(token) : undefined;
    if (other === undefined) {
      if (answer.status !== 401) rotation.worked(token);
      return answer;
    }
    const second = await this.#send(node, purpose, method, path, body, other, signal);
    if (second.status !== 401) rotation.worked(other);
    return second;
  }

  async #send(
    node: AgentNode,
    purpose: Purpose,
    method: Dispatcher.HttpMethod,
    path: string,
    body: string | undefined,
    token: string,
    signal: AbortSignal | undefined,
  ): Promise<Answer> {
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const timeoutMs = this.#timeoutOf(purpose);
    const timeout = AbortSignal.timeout(timeoutMs);
    try {
      const response = await this.#clientFor(node.address, purpose).request({
        method,
        path,
        headers,
        body,
        signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
      });
      const text = await response.body.text();
      let json: unknown;
      try {
        json = text === '' ? undefined : JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: response.statusCode, json };
    } catch (err) {
      if (err instanceof AgentCallError) throw err;
      const timedOut = timeout.aborted && signal?.aborted !== true;
      const message = timedOut
        ? `no answer within ${timeoutMs} ms`
        : signal?.aborted === true
          ? 'call aborted'
          : `unreachable at ${node.address}: ${messageOf(err)}`;
      // A push that timed out was sent: the node is still on it (see the header), so no resend at once.
      const retriable = signal?.aborted !== true && !(timedOut && purpose === 'push');
      throw new AgentCallError(node.name, message, { retriable, cause: err });
    }
  }

  #clientFor(address: string, purpose: Purpose): Client {
    let agent = this.#agents.get(address);
    if (agent === undefined) {
      agent = { push: undefined, probe: undefined };
      this.#agents.set(address, agent);
    }
    return (agent[purpose] ??= new Client(`http://${address}`, {
      pipelining: 1,
      keepAliveTimeout: 30_000,
      connect: { timeout: this.#timeoutMs },
      headersTimeout: this.#timeoutOf(purpose),
      bodyTimeout: this.#timeoutOf(purpose),
    }));
  }

  #timeoutOf(purpose: Purpose): number {
    return purpose === 'push' ? this.#pushTimeoutMs : this.#timeoutMs;
  }
}

interface Answer {
  status: number;
  json: unknown;
}

function appliedGenerationIn(json: unknown): number | undefined {
  if (typeof json !== 'object' || json === null) return undefined;
  const applied = (json as { appliedGeneration?: unknown }).appliedGeneration;
  return typeof applied === 'number' && Number.isSafeInteger(applied) ? applied : undefined;
}

function errorText(json: unknown): string | undefined {
  if (typeof json !== 'object' || json === null) return undefined;
  const error = (json as { error?: unknown }).error;
  return typeof error === 'string' ? error : undefined;
}

function reasonText(json: unknown): string | undefined {
  if (typeof json !== 'object' || json === null) return undefined;
  const reason = (json as { reason?: unknown }).reason;
  return typeof reason === 'string' ? reason : undefined;
}
