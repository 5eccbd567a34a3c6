// The PoolSetter over HTTP: one undici Pool (keep-alive) per agent address, a
// timeout per attempt, and retries with exponential backoff and jitter on
// network errors, timeouts, 5xx and 429 — never on other 4xx, which another
// attempt would not change. A 409 is the agent refusing a stale generation.
import { nodeInfoSchema, type NodeInfo, type PoolTarget } from '@warmpool/api';
import { Backoff, sleep } from '@warmpool/kube';
import { Pool, type Dispatcher } from 'undici';
import type { TokenSource } from '../token.js';
import { AgentCallError, NoTokenError, StaleGenerationError, type AgentNode, type CallOptions, type PoolSetter } from './pool-setter.js';

export interface HttpPoolSetterOptions {
  token: TokenSource;
  /** Each attempt is abandoned after this long (default 2 s). */
  timeoutMs?: number;
  /** Attempts per setPools call, the first included (default 3). */
  attempts?: number;
  /** First retry delay (default 100 ms), doubling, with jitter. */
  retryInitialMs?: number;
  retryMaxMs?: number;
  /** Keep-alive connections per agent (default 2: pushes to one node are sequential). */
  connectionsPerNode?: number;
}

export class HttpPoolSetter implements PoolSetter {
  readonly #token: TokenSource;
  readonly #timeoutMs: number;
  readonly #attempts: number;
  readonly #retryInitialMs: number;
  readonly #retryMaxMs: number;
  readonly #connections: number;
  readonly #pools = new Map<string, Pool>();
  #closed = false;

  constructor(options: HttpPoolSetterOptions) {
    this.#token = options.token;
    this.#timeoutMs = options.timeoutMs ?? 2_000;
    this.#attempts = Math.max(1, options.attempts ?? 3);
    this.#retryInitialMs = options.retryInitialMs ?? 100;
    this.#retryMaxMs = options.retryMaxMs ?? 2_000;
    this.#connections = options.connectionsPerNode ?? 2;
  }

  async setPools(node: AgentNode, generation: number, pools: readonly PoolTarget[], options: CallOptions = {}): Promise<NodeInfo> {
    const body = JSON.stringify({ generation, pools });
    const backoff = new Backoff({ initialMs: this.#retryInitialMs, maxMs: this.#retryMaxMs, factor: 2, jitter: 0.5 });
    for (let attempt = 1; ; attempt++) {
      try {
        const answer = await this.#call(node, 'PUT', '/v1/pools', body, options.signal);
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
    return this.#infoFrom(node, await this.#call(node, 'GET', '/v1/info', undefined, options.signal));
  }

  forget(address: string): void {
    const pool = this.#pools.get(address);
    if (pool === undefined) return;
    this.#pools.delete(address);
    void pool.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    // In-flight calls were aborted by the caller's signal; destroy() does not wait for stragglers.
    await Promise.all(pools.map((pool) => pool.destroy().catch(() => undefined)));
  }

  #infoFrom(node: AgentNode, answer: Answer): NodeInfo {
    if (answer.status < 200 || answer.status >= 300) {
      const reason = errorText(answer.json) ?? `HTTP ${answer.status}`;
      throw new AgentCallError(node.name, `answered ${answer.status}: ${reason}`, {
        status: answer.status,
        retriable: answer.status >= 500 || answer.status === 429,
      });
    }
    const parsed = nodeInfoSchema.safeParse(answer.json);
    if (!parsed.success) throw new AgentCallError(node.name, `answered a body that is not node info: ${parsed.error.issues[0]?.message ?? 'invalid'}`, { status: answer.status, retriable: false });
    return parsed.data;
  }

  async #call(node: AgentNode, method: Dispatcher.HttpMethod, path: string, body: string | undefined, signal: AbortSignal | undefined): Promise<Answer> {
    const token = this.#token();
    if (token === undefined) throw new NoTokenError('no fleet token: refusing to call node agents unauthenticated');
    if (this.#closed) throw new AgentCallError(node.name, 'the pool setter is closed', { retriable: false });
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    try {
      const response = await this.#poolFor(node.address).request({
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
      const message = timedOut ? `no answer within ${this.#timeoutMs} ms` : signal?.aborted === true ? 'call aborted' : `unreachable at ${node.address}: ${(err as Error).message}`;
      throw new AgentCallError(node.name, message, { retriable: signal?.aborted !== true, cause: err });
    }
  }

  #poolFor(address: string): Pool {
    let pool = this.#pools.get(address);
    if (pool === undefined) {
      pool = new Pool(`http://${address}`, {
        connections: this.#connections,
        pipelining: 1,
        keepAliveTimeout: 30_000,
        connect: { timeout: this.#timeoutMs },
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
      });
      this.#pools.set(address, pool);
    }
    return pool;
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
