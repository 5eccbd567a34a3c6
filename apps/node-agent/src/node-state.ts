// What the agent knows of its node's sandboxd: the last info body it saw,
// from a short poll of GET /v1/info and from the answers of its own SetPools,
// info and drain calls. Listeners get every fresh view; deciding what is
// significant is theirs (the inventory publisher compares snapshots).
import { nodeInfoSchema, type NodeInfo } from '@warmpool/api';
import { messageOf } from '@warmpool/runtime';
import type { Logger } from '@warmpool/runtime';
import type { SandboxdAnswer, SandboxdClient } from './sandboxd/client.js';
import { isSandboxdUnavailable } from './sandboxd/errors.js';
import type { AgentMetrics } from './metrics.js';

export interface NodeStateOptions {
  client: SandboxdClient;
  pollIntervalMs: number;
  logger: Logger;
  metrics: AgentMetrics;
}

const decoder = new TextDecoder();
const NOT_POLLED = 'sandboxd not polled yet';
/**
 * sandboxd's 403 to an operator route (GET /v1/info, PUT /v1/pools, drain) means the token is a tenant's: valid,
 * not root. The agent needs the root api_token for every one of them, so it is not ready, and says exactly that.
 */
export const TENANT_TOKEN_PROBLEM = 'the fleet token must be the root api_token (sandboxd answered 403 to /v1/info)';

/** The info body of a 200 answer, or undefined when it is not one. */
export function infoFromAnswer(answer: SandboxdAnswer): NodeInfo | undefined {
  if (answer.status !== 200) return undefined;
  try {
    const parsed = nodeInfoSchema.safeParse(JSON.parse(decoder.decode(answer.body)));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export class NodeState {
  readonly #options: NodeStateOptions;
  readonly #listeners: Array<(info: NodeInfo) => void> = [];
  #info: NodeInfo | undefined;
  #answering = false;
  #problem: string | undefined = NOT_POLLED;
  #timer: NodeJS.Timeout | undefined;
  #polling: Promise<void> | undefined;
  #closed = false;

  constructor(options: NodeStateOptions) {
    this.#options = options;
  }

  /** The last info body seen, if any. */
  get info(): NodeInfo | undefined {
    return this.#info;
  }

  /** Whether the last poll got a usable answer. */
  get answering(): boolean {
    return this.#answering;
  }

  /** Why sandboxd is not answering, for /readyz and logs. */
  get problem(): string | undefined {
    return this.#problem;
  }

  onInfo(listener: (info: NodeInfo) => void): void {
    this.#listeners.push(listener);
  }

  /** A fresh info body from any source. */
  observe(info: NodeInfo): void {
    this.#info = info;
    this.#options.metrics.observeInfo(info);
    for (const listener of this.#listeners) listener(info);
  }

  /** Polls now, then every pollIntervalMs. Resolves after the first poll. */
  start(): Promise<void> {
    return this.#pollAndReschedule();
  }

  /** Something suggests the node changed (a claim refused with 429): poll now rather than at the next tick. */
  pollSoon(): void {
    if (this.#closed || this.#polling !== undefined) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#pollAndReschedule(), 0);
    this.#timer.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#polling;
  }

  #pollAndReschedule(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#polling ??= this.#poll().finally(() => {
      this.#polling = undefined;
      if (this.#closed) return;
      clearTimeout(this.#timer);
      this.#timer = setTimeout(() => void this.#pollAndReschedule(), this.#options.pollIntervalMs);
      this.#timer.unref();
    });
    return this.#polling;
  }

  async #poll(): Promise<void> {
    const { client, logger, metrics } = this.#options;
    let problem: string | undefined;
    try {
      const answer = await client.info();
      const info = infoFromAnswer(answer);
      if (info !== undefined) this.observe(info);
      else if (answer.status === 401)
        problem = "sandboxd refuses the agent's token (401): the agent and sandboxd must share the fleet token";
      else if (answer.status === 403) problem = TENANT_TOKEN_PROBLEM;
      else problem = `sandboxd answered GET /v1/info with ${answer.status}`;
    } catch (err) {
      if (isSandboxdUnavailable(err)) {
        metrics.sandboxdError(err.operation, err.kind);
        problem = err.message;
      } else {
        logger.error('polling sandboxd failed', { err });
        problem = `polling sandboxd failed: ${messageOf(err)}`;
      }
    }
    // Log transitions only: a node whose sandboxd is down would otherwise log every second.
    const before = this.#problem;
    if (problem !== undefined && problem !== before) logger.warn('sandboxd not answering', { problem });
    if (problem === undefined && before !== undefined && before !== NOT_POLLED) logger.info('sandboxd answering again');
    this.#answering = problem === undefined;
    this.#problem = problem;
  }
}
