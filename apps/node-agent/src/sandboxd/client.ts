// The agent's one way to reach its node's sandboxd: undici Pools with
// keep-alive over TCP or a unix socket, one method per endpoint. Answers come
// back as raw bytes so the API can pass them through without re-encoding;
// only a missing answer (refused, reset, timed out) is thrown.
//
// Two pools, so slow claims can never starve the node's health: claims and
// the other per-sandbox calls on one, control traffic (info, SetPools,
// drain) on a small one of its own. Every buffered call has one deadline,
// counted from the moment it is made, so the wait for a free connection is
// part of it.
import { Pool } from 'undici';
import type { Dispatcher } from 'undici';
import { TokenRotation } from '@warmpool/runtime';
import { contentTypeOf, type SandboxdAnswer, type SandboxdReceiver, type SandboxdStreamingAnswer } from './answer.js';
import { CollectingHandler } from './collecting-handler.js';
import { DeadlineList } from './deadlines.js';
import { DeadlineError, isConnectFailure, toUnavailable } from './errors.js';
import { parseSandboxdUrl } from './target.js';

export type { SandboxdAnswer, SandboxdReceiver, SandboxdStreamingAnswer } from './answer.js';
export { parseSandboxdUrl, type SandboxdTarget } from './target.js';

export interface SandboxdClientOptions {
  /** `http://host:port` or `unix:/path/to/socket`. */
  url: string;
  /** Sent as root (`Authorization: Bearer`) on every call that is not made with a sandbox's own token. */
  rootToken: string | undefined;
  /**
   * After setRootToken, how long the replaced token is still tried when
   * sandboxd refuses the new one with 401 (sandboxd may read the rotated
   * Secret later than the agent, or earlier). Default 0: no fallback.
   */
  rootTokenGraceMs?: number;
  /**
   * Every buffered call fails when its whole answer has not come this long
   * after the call was made (waiting for a connection included); a list's
   * headers, likewise, and then each of its body chunks.
   */
  timeoutMs: number;
  /**
   * A claim's deadline (default timeoutMs): a cold claim legitimately takes as long as sandboxd's cold window (up to
   * 90 s), and cutting it short only turns a claim that will land into "outcome unknown".
   */
  claimTimeoutMs?: number;
  /** SetPools' deadline (default timeoutMs): a real sandboxd answers once the warm VMs it trims are destroyed. */
  setPoolsTimeoutMs?: number;
  /** Keep-alive connections at most for claims, release, renew and lookups. */
  connections?: number;
  /** Keep-alive connections at most for info, SetPools and drain (default 4). */
  controlConnections?: number;
}

const JSON_TYPE = 'application/json';

type Headers = Record<string, string>;

/**
 * The root headers of one token, built once per token, not per call: the claim path should only allocate what it must.
 */
interface RootHeaders {
  plain: Headers;
  json: Headers;
}

const NO_ROOT: RootHeaders = { plain: {}, json: { 'content-type': JSON_TYPE } };

export class SandboxdClient {
  /** Claims and the other per-sandbox calls. */
  readonly #pool: Pool;
  /** info, SetPools, drain: what the node's health and placement hang on. */
  readonly #control: Pool;
  readonly #timeoutMs: number;
  // The buffered calls' deadlines, one list (and one timer) per duration.
  readonly #deadlines: DeadlineList;
  readonly #claimDeadlines: DeadlineList;
  readonly #setPoolsDeadlines: DeadlineList;
  readonly #root: TokenRotation<RootHeaders>;

  constructor(options: SandboxdClientOptions) {
    const target = parseSandboxdUrl(options.url);
    this.#timeoutMs = options.timeoutMs;
    const claimTimeoutMs = options.claimTimeoutMs ?? options.timeoutMs;
    const setPoolsTimeoutMs = options.setPoolsTimeoutMs ?? options.timeoutMs;
    this.#deadlines = new DeadlineList(options.timeoutMs);
    this.#claimDeadlines = new DeadlineList(claimTimeoutMs);
    this.#setPoolsDeadlines = new DeadlineList(setPoolsTimeoutMs);
    const pool = (connections: number, longestCallMs: number): Pool =>
      new Pool(target.origin, {
        connections,
        pipelining: 1,
        connect: { timeout: Math.min(options.timeoutMs, 5_000) },
        // The buffered calls' own deadlines come first (so no shorter headers timeout may cut a slow claim or
        // SetPools); these bound the streamed list.
        headersTimeout: Math.max(options.timeoutMs, longestCallMs),
        bodyTimeout: options.timeoutMs,
        keepAliveTimeout: 30_000,
        ...(target.socketPath ? { socketPath: target.socketPath } : {}),
      });
    this.#pool = pool(options.connections ?? 128, claimTimeoutMs);
    this.#control = pool(options.controlConnections ?? 4, setPoolsTimeoutMs);
    this.#root = new TokenRotation(options.rootToken, {
      graceMs: options.rootTokenGraceMs ?? 0,
      derive: (token) => ({
        plain: { authorization: `Bearer ${token}` },
        json: { authorization: `Bearer ${token}`, 'content-type': JSON_TYPE },
      }),
    });
  }

  /** Used after the token file was rotated: the replaced token stays a fallback for the grace period. */
  setRootToken(token: string | undefined): void {
    this.#root.set(token);
  }

  // The token that last worked (see TokenRotation.preferred).
  get #rootHeaders(): Headers {
    return (this.#root.preferred ?? NO_ROOT).plain;
  }

  get #rootJsonHeaders(): Headers {
    return (this.#root.preferred ?? NO_ROOT).json;
  }

  /** The root token `headers` were built from, if they are root headers. */
  #rootOf(headers: Headers): RootHeaders | undefined {
    const preferred = this.#root.preferred;
    return preferred !== undefined && (headers === preferred.plain || headers === preferred.json)
      ? preferred
      : undefined;
  }

  info(): Promise<SandboxdAnswer> {
    return this.#call(this.#control, 'info', 'GET', '/v1/info', undefined, this.#rootHeaders);
  }

  /** `json` is a validated sandboxd SetPools body (no generation: that is the agent's). */
  setPools(json: string): Promise<SandboxdAnswer> {
    return this.#call(
      this.#control,
      'set_pools',
      'PUT',
      '/v1/pools',
      json,
      this.#rootJsonHeaders,
      this.#setPoolsDeadlines,
    );
  }

  claim(json: string): Promise<SandboxdAnswer> {
    return this.#call(this.#pool, 'claim', 'POST', '/v1/claim', json, this.#rootJsonHeaders, this.#claimDeadlines);
  }

  /** The claim for the API's hot path: the answer comes back through `receiver`, with no promise in between. */
  claimInto(json: string, receiver: SandboxdReceiver): void {
    this.#dispatch(
      this.#pool,
      'claim',
      'POST',
      '/v1/claim',
      json,
      this.#rootJsonHeaders,
      receiver,
      this.#claimDeadlines,
    );
  }

  /** `authorization` is the caller's own header for a sandbox-token call; root when omitted. */
  release(id: string, authorization?: string): Promise<SandboxdAnswer> {
    const headers = authorization === undefined ? this.#rootHeaders : { authorization };
    return this.#call(
      this.#pool,
      'release',
      'POST',
      `/v1/sandboxes/${encodeURIComponent(id)}/release`,
      undefined,
      headers,
    );
  }

  renew(id: string, json: string, authorization?: string): Promise<SandboxdAnswer> {
    const headers = authorization === undefined ? this.#rootJsonHeaders : { authorization, 'content-type': JSON_TYPE };
    return this.#call(this.#pool, 'renew', 'POST', `/v1/sandboxes/${encodeURIComponent(id)}/renew`, json, headers);
  }

  getSandbox(id: string): Promise<SandboxdAnswer> {
    return this.#call(
      this.#pool,
      'get_sandbox',
      'GET',
      `/v1/sandboxes/${encodeURIComponent(id)}`,
      undefined,
      this.#rootHeaders,
    );
  }

  /** The body streams: a node holding thousands of claims answers a large list. */
  async listSandboxes(claimRef?: string): Promise<SandboxdStreamingAnswer> {
    const path = claimRef === undefined ? '/v1/sandboxes' : `/v1/sandboxes?claim_ref=${encodeURIComponent(claimRef)}`;
    const answer = await this.#send('list_sandboxes', 'GET', path, undefined, this.#rootHeaders);
    return { status: answer.statusCode, body: answer.body, contentType: contentTypeOf(answer.headers) };
  }

  drain(): Promise<SandboxdAnswer> {
    return this.#call(this.#control, 'drain', 'POST', '/v1/drain', undefined, this.#rootHeaders);
  }

  undrain(): Promise<SandboxdAnswer> {
    return this.#call(this.#control, 'undrain', 'DELETE', '/v1/drain', undefined, this.#rootHeaders);
  }

  /** Waits for calls in flight, then closes every connection. */
  async close(): Promise<void> {
    await Promise.all([this.#pool.close(), this.#control.close()]);
    for (const deadlines of [this.#deadlines, this.#claimDeadlines, this.#setPoolsDeadlines]) deadlines.close();
  }

  #call(
    pool: Pool,
    operation: string,
    method: Dispatcher.HttpMethod,
    path: string,
    body: string | undefined,
    headers: Headers,
    deadlines = this.#deadlines,
  ): Promise<SandboxdAnswer> {
    return new Promise((resolve, reject) => {
      this.#dispatch(pool, operation, method, path, body, headers, { answer: resolve, failed: reject }, deadlines);
    });
  }

  /**
   * The buffered calls skip undici's Readable-based `request()` API: a
   * dispatch handler that gathers the few chunks of a small JSON answer costs
   * the claim path less than a stream per call.
   */
  #dispatch(
    pool: Pool,
    operation: string,
    method: Dispatcher.HttpMethod,
    path: string,
    body: string | undefined,
    headers: Headers,
    receiver: SandboxdReceiver,
    deadlines = this.#deadlines,
  ): void {
    const root = this.#rootOf(headers);
    // Only while a replaced token is in grace is there anything to fall back to (and a receiver to wrap).
    const through =
      root !== undefined && this.#root.previous !== undefined
        ? this.#fallingBack(pool, operation, method, path, body, root, headers === root.json, receiver, deadlines)
        : receiver;
    pool.dispatch({ method, path, headers, body }, new CollectingHandler(operation, deadlines, through));
  }

  /**
   * A root call during a rotation: sandboxd's 401 to one token sends the call
   * again with the other (a 401 is sandboxd refusing before doing anything,
   * so even a claim is safe to repeat), and whichever token sandboxd took is
   * the one presented from then on. The second attempt has a deadline of its own.
   */
  #fallingBack(
    pool: Pool,
    operation: string,
    method: Dispatcher.HttpMethod,
    path: string,
    body: string | undefined,
    used: RootHeaders,
    json: boolean,
    receiver: SandboxdReceiver,
    deadlines: DeadlineList,
  ): SandboxdReceiver {
    const tookIt = (token: RootHeaders, answer: SandboxdAnswer): void => {
      if (answer.status !== 401) this.#root.worked(token);
    };
    return {
      answer: (answer) => {
        const other = answer.status === 401 ? this.#root.alternateTo(used) : undefined;
        if (other === undefined) {
          tookIt(used, answer);
          receiver.answer(answer);
          return;
        }
        pool.dispatch(
          { method, path, headers: json ? other.json : other.plain, body },
          new CollectingHandler(operation, deadlines, {
            answer: (second) => {
              tookIt(other, second);
              receiver.answer(second);
            },
            failed: (err) => receiver.failed(err),
          }),
        );
      },
      failed: (err) => receiver.failed(err),
    };
  }

  /**
   * A streamed answer: the deadline covers the wait for a connection and for the headers; the pool's bodyTimeout, each
   * chunk after.
   */
  async #send(
    operation: string,
    method: Dispatcher.HttpMethod,
    path: string,
    body: string | undefined,
    headers: Headers,
  ): Promise<Dispatcher.ResponseData> {
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new DeadlineError('deadline passed')), this.#timeoutMs);
    try {
      const root = this.#rootOf(headers);
      const answer = await this.#pool.request({ method, path, headers, body, signal: deadline.signal });
      const other = root !== undefined && answer.statusCode === 401 ? this.#root.alternateTo(root) : undefined;
      if (other === undefined) {
        if (root !== undefined && answer.statusCode !== 401) this.#root.worked(root);
        return answer;
      }
      // As #fallingBack, for a streamed answer (within the same deadline).
      await answer.body.dump();
      const second = await this.#pool.request({
        method,
        path,
        headers: headers === root?.json ? other.json : other.plain,
        body,
        signal: deadline.signal,
      });
      if (second.statusCode !== 401) this.#root.worked(other);
      return second;
    } catch (err) {
      // request() does not say whether the request was written; only a failed connect surely was not.
      throw toUnavailable(operation, err, this.#timeoutMs, !isConnectFailure(err));
    } finally {
      clearTimeout(timer);
    }
  }
}
