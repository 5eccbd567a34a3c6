// The bearer check for a server whose callers hold keep-alive connections:
// a connection that presented the current token once is remembered with the
// exact Authorization header it sent, and the same header on that connection
// again is admitted without hashing it. The rules:
//
// - Only a header that presented the *current* token is remembered (never a
//   wrong one, never the replaced one in its grace, which would outlive it),
//   and only for the token generation it was checked against: a rotation
//   (or the token emptied) voids every remembered verdict at once.
// - The remembered header is compared with the presented one in time that
//   depends only on the presented header's length, never on where they
//   differ: a connection shared by several callers (a proxy pooling its
//   upstream connections) learns nothing about a header another caller sent.
// - Anything else (no header remembered, a different one, a new generation)
//   takes the full check (AcceptedToken: SHA-256, constant-time compare).
//
// Whether a request took the short path reveals only whether its header
// equals a valid one, which the answer's status says anyway.
import { RememberedHeader } from './same-header.js';
import type { AcceptedToken } from './token-check.js';
import { bearerToken } from './token.js';

interface Remembered {
  /** The whole Authorization header, as the connection sent it. */
  header: RememberedHeader;
  generation: number;
}

export class ConnectionTokenCheck {
  readonly #token: AcceptedToken;
  // Keyed by the connection (the request's socket): forgotten with it.
  readonly #admitted = new WeakMap<object, Remembered>();

  constructor(token: AcceptedToken) {
    this.#token = token;
  }

  /** Whether `authorization`, an Authorization header sent on `connection`, presents a token the server accepts. */
  admits(connection: object, authorization: string | undefined): boolean {
    if (authorization === undefined) return false;
    const generation = this.#token.generation;
    const remembered = this.#admitted.get(connection);
    if (remembered !== undefined && remembered.generation === generation && remembered.header.matches(authorization))
      return true;
    const match = this.#token.match(bearerToken(authorization));
    if (match === 'current')
      this.#admitted.set(connection, { header: new RememberedHeader(authorization), generation });
    return match !== undefined;
  }
}
