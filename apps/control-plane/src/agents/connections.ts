// The connections the agent client keeps per agent address, and one HTTP
// exchange over them with its timeout. Invariant: every failure leaves here
// as an AgentCallError; a push that was sent and timed out is not retriable
// (the node is still on it).
import { messageOf } from '@warmpool/runtime';
import { Client, Pool, type Dispatcher } from 'undici';
import type { Answer } from './answers.js';
import { AgentCallError } from './errors.js';
import type { AgentNode } from './pool-setter.js';

/** The driver's two lanes to a node: pushes, and probes that never wait behind a push. */
export type Purpose = 'push' | 'probe';

interface PerAgent {
  push: Client | undefined;
  probe: Client | undefined;
  claims: Pool | undefined;
}

export interface AgentConnectionsOptions {
  connectTimeoutMs: number;
  timeoutOf(purpose: Purpose): number;
  /** Keep-alive connections per agent in the claims' Pool. */
  claimConnections: number;
}

export interface Exchange {
  method: Dispatcher.HttpMethod;
  path: string;
  body: string | undefined;
  token: string;
  signal?: AbortSignal | undefined;
  /**
   * Takes a 200 answer's body line by line as it arrives (an NDJSON stream), instead of as `text` (then ''); any
   * other status's body is still `text`.
   */
  onLine?: ((line: string) => void) | undefined;
}

export class AgentConnections {
  readonly #options: AgentConnectionsOptions;
  readonly #agents = new Map<string, PerAgent>();
  #closed = false;

  constructor(options: AgentConnectionsOptions) {
    this.#options = options;
  }

  /** On the driver's lane `purpose` to `node`, with that lane's timeout. */
  async send(node: AgentNode, purpose: Purpose, exchange: Exchange): Promise<Answer> {
    const timeoutMs = this.#options.timeoutOf(purpose);
    const { signal } = exchange;
    const timeout = AbortSignal.timeout(timeoutMs);
    try {
      const agent = this.#agent(node.name, node.address);
      const client = (agent[purpose] ??= new Client(`http://${node.address}`, {
        pipelining: 1,
        keepAliveTimeout: 30_000,
        connect: { timeout: this.#options.connectTimeoutMs },
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      }));
      return await request(client, exchange, signal === undefined ? timeout : AbortSignal.any([signal, timeout]));
    } catch (err) {
      if (err instanceof AgentCallError) throw err;
      const timedOut = timeout.aborted && signal?.aborted !== true;
      const message = timedOut
        ? `no answer within ${timeoutMs} ms`
        : signal?.aborted === true
          ? 'call aborted'
          : `unreachable at ${node.address}: ${messageOf(err)}`;
      const retriable = signal?.aborted !== true && !(timedOut && purpose === 'push');
      throw new AgentCallError(node.name, message, { retriable, cause: err });
    }
  }

  /** On the claims' Pool to `address`. */
  async sendClaim(address: string, exchange: Exchange & { timeoutMs: number }): Promise<Answer> {
    const { timeoutMs, signal } = exchange;
    const timeout = AbortSignal.timeout(timeoutMs);
    try {
      const agent = this.#agent(address, address);
      const pool = (agent.claims ??= new Pool(`http://${address}`, {
        connections: this.#options.claimConnections,
        pipelining: 1,
        keepAliveTimeout: 30_000,
      }));
      return await request(pool, exchange, signal === undefined ? timeout : AbortSignal.any([signal, timeout]), {
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
    } catch (err) {
      if (err instanceof AgentCallError) throw err;
      const message = timeout.aborted && signal?.aborted !== true ? `no answer within ${timeoutMs} ms` : messageOf(err);
      throw new AgentCallError(address, message, { retriable: signal?.aborted !== true, cause: err });
    }
  }

  forget(address: string): void {
    const agent = this.#agents.get(address);
    if (agent === undefined) return;
    this.#agents.delete(address);
    for (const dispatcher of [agent.push, agent.probe, agent.claims]) void dispatcher?.close().catch(() => undefined);
  }

  /** In-flight calls were aborted by their callers' signals; destroy() does not wait for stragglers. */
  async close(): Promise<void> {
    this.#closed = true;
    const agents = [...this.#agents.values()];
    this.#agents.clear();
    await Promise.allSettled(
      agents.flatMap((agent) => [agent.push?.destroy(), agent.probe?.destroy(), agent.claims?.close()]),
    );
  }

  #agent(node: string, address: string): PerAgent {
    if (this.#closed) throw new AgentCallError(node, 'the agent client is closed');
    let agent = this.#agents.get(address);
    if (agent === undefined) {
      agent = { push: undefined, probe: undefined, claims: undefined };
      this.#agents.set(address, agent);
    }
    return agent;
  }
}

async function request(
  dispatcher: Dispatcher,
  exchange: Exchange,
  signal: AbortSignal,
  timeouts: { headersTimeout?: number; bodyTimeout?: number } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${exchange.token}`, accept: 'application/json' };
  if (exchange.body !== undefined) headers['content-type'] = 'application/json';
  const response = await dispatcher.request({
    method: exchange.method,
    path: exchange.path,
    headers,
    body: exchange.method === 'POST' || exchange.method === 'PUT' ? (exchange.body ?? '') : undefined,
    signal,
    ...timeouts,
  });
  if (exchange.onLine === undefined || response.statusCode !== 200)
    return { status: response.statusCode, text: await response.body.text() };
  await readLines(response.body, exchange.onLine);
  return { status: response.statusCode, text: '' };
}

/** Each non-empty line of `body` as soon as it is whole; a last line without its newline at the end. */
async function readLines(body: AsyncIterable<Uint8Array>, onLine: (line: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let rest = '';
  for await (const chunk of body) {
    const lines = (rest + decoder.decode(chunk, { stream: true })).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) if (line !== '') onLine(line);
  }
  rest += decoder.decode();
  if (rest !== '') onLine(rest);
}
