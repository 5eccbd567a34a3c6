// Who is calling and what they may do, asked of the apiserver: a TokenReview
// for the bearer token, a SubjectAccessReview for (namespace, verb) on one
// resource (sandboxclaims.extensions.agents.x-k8s.io by default — the same RBAC
// that lets someone create SandboxClaims lets them claim over HTTP). Decisions (allow and deny
// alike) are cached for at most `ttlMs` (10 s by default, the most the API
// promises), keyed by a hash of the token, never the token itself;
// concurrent identical questions share one review. A caller that has the
// token's key already (tokenKey, remembered by the control plane per
// keep-alive connection) may hand it in and skip the hash; the cache, its TTL
// and the sharing decide exactly as for a key computed here.
import { hash } from 'node:crypto';
import { EXTENSIONS_GROUP } from '@warmpool/api';
import type { KubeTransport } from './transport.js';

export const CLAIM_RESOURCE = 'sandboxclaims';
export type ClaimVerb = 'create' | 'get' | 'update' | 'delete';

export interface UserInfo {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** The apiserver could not be asked: the request cannot be decided (503). */
export class ReviewUnavailable extends Error {
  override name = 'ReviewUnavailable';
}

declare const TOKEN_KEY: unique symbol;

/** What a token's reviews are cached under: a hash of it (tokenKey), never the token. */
export type TokenKey = string & { readonly [TOKEN_KEY]: true };

export interface AccessReviewer {
  /**
   * The token's user, or undefined when the token is not valid. `key`, when given, must be `tokenKey(token)` of this
   * reviewer (computed before, and remembered): it only saves computing it again.
   */
  authenticate(token: string, key?: TokenKey): Promise<UserInfo | undefined>;
  authorize(user: UserInfo, namespace: string, verb: ClaimVerb): Promise<boolean>;
  /** The key authenticate caches `token`'s review under; absent when the reviewer keys nothing (a stand-in). */
  tokenKey?(token: string): TokenKey;
}

interface Cached<T> {
  value: T;
  until: number;
}

export interface KubeAccessReviewerOptions {
  transport: Pick<KubeTransport, 'request'>;
  /**
   * The resource reviewed (default sandboxclaims.extensions.agents.x-k8s.io; the Sandbox API reviews
   * sandboxes.agents.x-k8s.io).
   */
  resource?: { group: string; resource: string };
  /** How long a decision is reused (default and at most 10 s). */
  ttlMs?: number;
  /** Entries kept per cache before the oldest go (default 10 000). */
  maxEntries?: number;
  /**
   * How long a call waits for a review (default 10 s); past it the call fails ReviewUnavailable (503). Every caller
   * of one token waits on the same review in flight: one stuck on a frozen apiserver would otherwise hold them all
   * for minutes. The review itself goes on (a slow authenticating webhook may take longer), under the transport's
   * own idle timeout, and its answer is cached for the calls after it.
   */
  reviewWaitMs?: number;
  now?: () => number;
}

export const DEFAULT_REVIEW_WAIT_MS = 10_000;

export class KubeAccessReviewer implements AccessReviewer {
  readonly #transport: Pick<KubeTransport, 'request'>;
  readonly #resource: { group: string; resource: string };
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #reviewWaitMs: number;
  readonly #now: () => number;
  readonly #users = new Map<string, Cached<UserInfo | undefined>>();
  readonly #userKeys = new WeakMap<UserInfo, string>();
  readonly #decisions = new Map<string, Cached<boolean>>();
  readonly #inFlight = new Map<string, Promise<unknown>>();

  constructor(options: KubeAccessReviewerOptions) {
    this.#transport = options.transport;
    this.#resource = options.resource ?? { group: EXTENSIONS_GROUP, resource: CLAIM_RESOURCE };
    this.#ttlMs = Math.min(options.ttlMs ?? 10_000, 10_000);
    this.#maxEntries = options.maxEntries ?? 10_000;
    this.#reviewWaitMs = options.reviewWaitMs ?? DEFAULT_REVIEW_WAIT_MS;
    this.#now = options.now ?? Date.now;
  }

  /** SHA-256 of the token: the cache never holds a token, and a key is the same for every caller of one token. */
  tokenKey(token: string): TokenKey {
    return `t:${hash('sha256', token, 'base64url')}` as TokenKey;
  }

  authenticate(token: string, key: TokenKey = this.tokenKey(token)): Promise<UserInfo | undefined> {
    return this.#cached(this.#users, key, async () => {
      const review = await this.#post<{ status?: { authenticated?: boolean; user?: UserInfo } }>(
        '/apis/authentication.k8s.io/v1/tokenreviews',
        {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenReview',
          spec: { token },
        },
      );
      const user = review.status?.user;
      return review.status?.authenticated === true && user?.username !== undefined ? user : undefined;
    });
  }

  /** `namespace` '' asks for all namespaces; `name` narrows to one object (RBAC resourceNames). */
  authorize(user: UserInfo, namespace: string, verb: ClaimVerb | 'list' | 'watch', name?: string): Promise<boolean> {
    const key = `${this.#userKey(user)}${JSON.stringify([namespace, verb, name ?? ''])}`;
    return this.#cached(this.#decisions, key, async () => {
      const review = await this.#post<{ status?: { allowed?: boolean } }>(
        '/apis/authorization.k8s.io/v1/subjectaccessreviews',
        {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user: user.username,
            ...(user.uid !== undefined ? { uid: user.uid } : {}),
            ...(user.groups !== undefined ? { groups: user.groups } : {}),
            ...(user.extra !== undefined ? { extra: user.extra } : {}),
            resourceAttributes: {
              ...(namespace !== '' ? { namespace } : {}),
              verb,
              group: this.#resource.group,
              resource: this.#resource.resource,
              ...(name !== undefined ? { name } : {}),
            },
          },
        },
      );
      return review.status?.allowed === true;
    });
  }

  /** The user's part of a decision's key, written once per user object (a cached TokenReview hands out the same one). */
  #userKey(user: UserInfo): string {
    let key = this.#userKeys.get(user);
    if (key === undefined) {
      key = `a:${JSON.stringify([user.username, user.uid ?? '', user.groups ?? [], user.extra ?? {}])}`;
      this.#userKeys.set(user, key);
    }
    return key;
  }

  async #post<T>(path: string, body: unknown): Promise<T> {
    try {
      return await this.#transport.request<T>({ method: 'POST', path, body });
    } catch (err) {
      throw new ReviewUnavailable(
        `the apiserver could not review the request: ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    }
  }

  async #cached<T>(cache: Map<string, Cached<T>>, key: string, ask: () => Promise<T>): Promise<T> {
    const now = this.#now();
    const hit = cache.get(key);
    if (hit !== undefined && hit.until > now) return hit.value;
    const pending = this.#inFlight.get(key) as Promise<T> | undefined;
    if (pending !== undefined) return this.#waitAtMost(pending);
    const asking = ask()
      .then((value) => {
        cache.delete(key);
        cache.set(key, { value, until: this.#now() + this.#ttlMs });
        if (cache.size > this.#maxEntries) {
          const oldest = cache.keys().next();
          if (oldest.done !== true) cache.delete(oldest.value);
        }
        return value;
      })
      .finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, asking);
    return this.#waitAtMost(asking);
  }

  /** `review`, or ReviewUnavailable once the call has waited reviewWaitMs (the review goes on). */
  #waitAtMost<T>(review: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(new ReviewUnavailable(`the apiserver has not answered the review within ${this.#reviewWaitMs} ms`)),
        this.#reviewWaitMs,
      );
    });
    return Promise.race([review, waited]).finally(() => clearTimeout(timer));
  }
}
