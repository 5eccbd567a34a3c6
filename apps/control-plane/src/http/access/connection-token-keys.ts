// A caller's TokenReview key, remembered per keep-alive connection. Callers
// send the same Authorization header on every request of a connection, and
// hashing its token into the key the reviews are cached under (the
// reviewer's tokenKey) is most of what authenticating a caller whose review
// is cached costs. Modelled on the node agent's ConnectionTokenCheck
// (libs/runtime), with the rules that keep every answer as it was:
//
// - What is remembered is the key, never a verdict. The key is a pure
//   function of the header (the hash of its bearer token), so a recalled key
//   is exactly the key that would be computed, and the reviewer decides as
//   before: its cache, the cache's TTL (≤ 10 s) and its sharing of reviews
//   in flight. A token revoked at the apiserver is refused once its cached
//   review expires, on a connection that remembers its key too.
// - For the same reason a header is remembered whatever its review says
//   (valid, not valid, or undecided): remembering one changes no answer,
//   only whether the next identical header is hashed.
// - The remembered header is compared with the presented one by RememberedHeader.matches
//   (libs/runtime), in time that depends only on the presented header's
//   length: a connection a proxy shares between callers learns nothing about
//   a header another caller sent (only, by presenting the very same header,
//   that it was the last one sent, which takes knowing it).
// - One header per connection, the last one hashed. Any other header, and a
//   request with no connection (app.request() in a test), is hashed.
import type { TokenKey } from '@warmpool/kube';
import { RememberedHeader } from '@warmpool/runtime';

interface Remembered {
  /** The whole Authorization header, as the connection sent it. */
  header: RememberedHeader;
  /** tokenKey of that header's bearer token. */
  key: TokenKey;
}

export class ConnectionTokenKeys {
  readonly #tokenKey: (token: string) => TokenKey;
  // Keyed by the connection (the request's socket): forgotten with it.
  readonly #remembered = new WeakMap<object, Remembered>();

  /** `tokenKey`: the reviewer's own (AccessReviewer.tokenKey), so a remembered key is one it would compute. */
  constructor(tokenKey: (token: string) => TokenKey) {
    this.#tokenKey = tokenKey;
  }

  /**
   * tokenKey(`token`), `token` being the bearer token of `authorization` (the caller's invariant), sent on `connection`
   * (the request's socket; undefined when not known).
   */
  keyOf(authorization: string, token: string, connection: object | undefined): TokenKey {
    if (connection === undefined) return this.#tokenKey(token);
    const remembered = this.#remembered.get(connection);
    if (remembered !== undefined && remembered.header.matches(authorization)) return remembered.key;
    const key = this.#tokenKey(token);
    this.#remembered.set(connection, { header: new RememberedHeader(authorization), key });
    return key;
  }
}
