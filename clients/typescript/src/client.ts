// A client of warmpool's HTTP claim API (docs/claim-api.md in the
// repository): claim, get, renew, release, with the retry rule of ./retry.ts.
// A claim without a claimRef gets one here, before the first attempt, so that
// every retry names the same claim and can only ever answer the same sandbox.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import {
  CLAIM_FAILURE_REASONS,
  claimBodySchema,
  claimRefSchema,
  renewClaimResponseSchema,
  type ClaimBody,
  type RenewClaimResponse,
} from './api/claims.js';
import { ClaimApiError, ConfigurationError, TransportError } from './errors.js';
import { DEFAULT_RETRY, withRetries, type RetryPolicy } from './retry.js';
import { defaultTokenSource, type TokenSource } from './token.js';

export type { ClaimBody as Claim, RenewClaimResponse } from './api/claims.js';

export interface ClaimClientOptions {
  /** The claim API's origin, e.g. `http://warmpool-claims.warmpool-system:8081`. */
  url: string;
  /** Default `default`. */
  namespace?: string;
  /** Default: defaultTokenSource() (WARMPOOL_TOKEN, WARMPOOL_TOKEN_FILE, the pod's token, the kubeconfig). */
  token?: TokenSource;
  /** Per attempt (default 30 s: a claim that misses the warm pool may wait for a cold boot). */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  /** Told about every retried failure (e.g. to log it). */
  onRetry?: (attempt: number, error: unknown, delayMs: number) => void;
}

/** What to claim: a pool, or a SandboxEnv (optionally one scaling group). */
export type ClaimRequest = ({ warmPool: string; env?: never } | { env: string; warmPool?: never }) & {
  scalingGroup?: string;
  ttlSeconds?: number;
  /** The idempotency key (a DNS label); generated when absent. */
  claimRef?: string;
};

const errorBodySchema = z.object({ error: z.string(), reason: z.string() });
const KNOWN_REASONS = new Set<string>(CLAIM_FAILURE_REASONS);

/** A fresh claimRef: a DNS label that no other claim will pick. */
export function newClaimRef(): string {
  return `c-${randomBytes(12).toString('hex')}`;
}

export class ClaimClient {
  readonly namespace: string;
  readonly #base: URL;
  readonly #token: TokenSource;
  readonly #timeoutMs: number;
  readonly #retry: RetryPolicy;
  readonly #onRetry: ClaimClientOptions['onRetry'];

  constructor(options: ClaimClientOptions) {
    let base: URL;
    try {
      base = new URL(options.url);
    } catch {
      throw new ConfigurationError(`the claim API URL ${options.url} is not a URL`);
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:')
      throw new ConfigurationError(`the claim API URL must be http(s), not ${base.protocol}`);
    this.#base = base;
    this.namespace = options.namespace ?? 'default';
    this.#token = options.token ?? defaultTokenSource();
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#retry = { ...DEFAULT_RETRY, ...options.retry };
    this.#onRetry = options.onRetry;
  }

  /** Claims a sandbox; retried with the same claimRef, so a retry never yields a second sandbox. */
  async claim(request: ClaimRequest): Promise<ClaimBody> {
    const claimRef = request.claimRef ?? newClaimRef();
    const ref = claimRefSchema.safeParse(claimRef);
    if (!ref.success) throw new ConfigurationError(`claimRef ${claimRef}: ${ref.error.issues[0]?.message ?? ''}`);
    const body = { ...request, claimRef };
    return this.#call('POST', this.#claims(), body, (json) => claimBodySchema.parse(json));
  }

  /** The claim (without its token) by sandbox id or claimRef. */
  get(id: string): Promise<ClaimBody> {
    return this.#call('GET', this.#claims(id), undefined, (json) => claimBodySchema.parse(json));
  }

  /** A new lease of `ttlSeconds` (the server's default, 300, when absent) from now. */
  renew(id: string, ttlSeconds?: number): Promise<RenewClaimResponse> {
    const body = ttlSeconds === undefined ? {} : { ttlSeconds };
    return this.#call('POST', `${this.#claims(id)}/renew`, body, (json) => renewClaimResponseSchema.parse(json));
  }

  /**
   * Releases the sandbox. A retried release whose first attempt did release it answers ClaimNotFound: with
   * `ignoreNotFound` that counts as released too.
   */
  async release(id: string, options: { ignoreNotFound?: boolean } = {}): Promise<void> {
    try {
      await this.#call('DELETE', this.#claims(id), undefined, () => undefined);
    } catch (error) {
      if (options.ignoreNotFound === true && error instanceof ClaimApiError && error.reason === 'ClaimNotFound') return;
      throw error;
    }
  }

  #claims(id?: string): string {
    const path = `/v1/namespaces/${encodeURIComponent(this.namespace)}/claims`;
    return id === undefined ? path : `${path}/${encodeURIComponent(id)}`;
  }

  #call<T>(method: string, path: string, body: unknown, parse: (json: unknown) => T): Promise<T> {
    return withRetries(() => this.#once(method, path, body, parse), this.#retry, this.#onRetry);
  }

  async #once<T>(method: string, path: string, body: unknown, parse: (json: unknown) => T): Promise<T> {
    const url = new URL(path, this.#base);
    const headers: Record<string, string> = { authorization: `Bearer ${this.#token()}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    let text: string;
    try {
      response = await fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.#timeoutMs),
        redirect: 'error',
      });
      text = await response.text();
    } catch (error) {
      const timedOut = error instanceof DOMException && (error.name === 'TimeoutError' || error.name === 'AbortError');
      throw timedOut
        ? new TransportError('timeout', `${method} ${url.pathname}: no answer within ${this.#timeoutMs} ms`, {
            cause: error,
          })
        : new TransportError('connection', `${method} ${url.pathname}: ${describe(error)}`, { cause: error });
    }
    if (response.ok) return parse(text === '' ? undefined : JSON.parse(text));
    throw apiError(response, text);
  }
}

function apiError(response: Response, text: string): ClaimApiError {
  const retryAfter = Number(response.headers.get('retry-after'));
  const retryAfterSeconds = Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined;
  let parsed: z.output<typeof errorBodySchema> | undefined;
  try {
    parsed = errorBodySchema.parse(JSON.parse(text));
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined)
    return new ClaimApiError(
      response.status,
      'Unknown',
      `HTTP ${response.status}: ${text.slice(0, 200)}`,
      retryAfterSeconds,
    );
  const reason = KNOWN_REASONS.has(parsed.reason) ? (parsed.reason as ClaimApiError['reason']) : 'Unknown';
  return new ClaimApiError(response.status, reason, parsed.error, retryAfterSeconds);
}

/** fetch's "fetch failed" hides the reason in its cause chain (ECONNREFUSED, ECONNRESET, …). */
function describe(error: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = error; e instanceof Error && parts.length < 4; e = e.cause) parts.push(e.message);
  return parts.join(': ') || String(error);
}
