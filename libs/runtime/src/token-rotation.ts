// A bearer token across a rotation. Every holder of a rotated Secret reads
// the new token at its own moment (kubelet refreshes each pod's volume on its
// own schedule), so a hard switch refuses callers that have not switched yet,
// and a caller that switched first is refused by holders that have not. Here
// the token that was replaced stays good for a grace period: a holder accepts
// both, and a caller that is refused with one tries the other.
//
// Each token is kept as what its holder needs of it (a digest to compare
// against, the headers to send), derived once per token, not per request.
import { normalizeToken } from './token.js';

export interface TokenRotationOptions<T> {
  /** How long the replaced token stays good after the new one was read. */
  graceMs: number;
  /** What the holder keeps of a token; called once per token. */
  derive: (token: string) => T;
  /** Default Date.now. */
  now?: () => number;
}

/**
 * The default grace: kubelet can take a minute or two to refresh a Secret volume in every pod, and each process
 * re-reads its file every few seconds.
 */
export const DEFAULT_TOKEN_GRACE_MS = 5 * 60_000;

interface Held<T> {
  token: string;
  value: T;
}

export class TokenRotation<T> {
  readonly #graceMs: number;
  readonly #derive: (token: string) => T;
  readonly #now: () => number;
  #current: Held<T> | undefined;
  #previous: Held<T> | undefined;
  #previousUntil = 0;
  #preferPrevious = false;

  constructor(token: string | undefined, options: TokenRotationOptions<T>) {
    this.#graceMs = options.graceMs;
    this.#derive = options.derive;
    this.#now = options.now ?? Date.now;
    const first = normalizeToken(token);
    this.#current = first === undefined ? undefined : { token: first, value: this.#derive(first) };
  }

  /**
   * The token read now. A different one becomes current at once and the one
   * it replaces stays good for the grace period; returns whether it changed.
   * With no token (an emptied Secret) there is no current one; the replaced
   * token keeps its grace, as after any rotation.
   */
  set(token: string | undefined): boolean {
    const next = normalizeToken(token);
    if (next === this.#current?.token) return false;
    if (this.#current !== undefined) {
      this.#previous = this.#current;
      this.#previousUntil = this.#now() + this.#graceMs;
    }
    // The token coming back during its own grace (a rotation rolled back) is the same token, not a new one.
    this.#current =
      next === undefined
        ? undefined
        : next === this.#previous?.token
          ? this.#previous
          : { token: next, value: this.#derive(next) };
    if (this.#current !== undefined && this.#current === this.#previous) this.#previous = undefined;
    this.#preferPrevious = false;
    return true;
  }

  get configured(): boolean {
    return this.#current !== undefined;
  }

  /** The token last read. */
  get token(): string | undefined {
    return this.#current?.token;
  }

  get current(): T | undefined {
    return this.#current?.value;
  }

  /** The replaced token while its grace lasts; undefined after. */
  get previous(): T | undefined {
    if (this.#previous === undefined) return undefined;
    if (this.#now() < this.#previousUntil) return this.#previous.value;
    this.#previous = undefined;
    this.#preferPrevious = false;
    return undefined;
  }

  /** The token last read, and the one it replaced while in grace: what a holder accepts. */
  accepted(): T[] {
    const previous = this.previous;
    const current = this.current;
    return [...(current !== undefined ? [current] : []), ...(previous !== undefined ? [previous] : [])];
  }

  /**
   * What a caller presents: the token last read, unless the replaced one
   * worked more recently (the other side has not switched yet) and is still
   * in grace.
   */
  get preferred(): T | undefined {
    const previous = this.previous;
    return this.#preferPrevious && previous !== undefined ? previous : (this.current ?? previous);
  }

  /** After `used` was refused: the other token to try, if there is one. */
  alternateTo(used: T): T | undefined {
    const previous = this.previous;
    const current = this.current;
    if (used === current) return previous;
    if (used === previous) return current;
    // `used` was replaced while the call was out: the token that now counts.
    return this.preferred;
  }

  /** `used` was accepted: keep presenting it (while it is good). */
  worked(used: T): void {
    const previous = this.previous;
    if (used === previous) this.#preferPrevious = true;
    else if (used === this.current) this.#preferPrevious = false;
  }
}
