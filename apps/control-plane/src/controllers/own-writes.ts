// What a status writer remembers of its own pinned writes, so that a cache
// which has not caught up with them is not mistaken for the object as it is.
//
// Every write is pinned to a resourceVersion (libs/kube pinned-status.ts). A
// chain is the versions one object passed through by our writes alone:
// [v0, v1, …, vn], v0 the version the cache showed when the chain began and
// each v(i+1) the version our write pinned to v(i) left. A write pinned to
// v(i) succeeds only if nothing else moved the object since, so v0 … vn differ
// in our status only: while the cache shows any of them, the object is at vn
// (or has moved on, and a write pinned to vn is refused) and its status is the
// one we wrote last. Invariant: a chain only grows at its end, by a write
// pinned to its last version.
//
// It also remembers the version a write was last refused at (409): trying
// again there cannot succeed, and a writer that runs often would otherwise
// send a refused write per run until its cache shows what moved the object.

/** A chain is cut to this many versions (oldest dropped): only a cache that lags that many of our writes misses it. */
const MAX_CHAIN = 16;

interface Chain<M> {
  versions: string[];
  /** What the writer wants back of its last write. */
  last: M;
}

/** What a write should be pinned to, and what it knows of the object there. */
export interface Recalled<M> {
  /** The version to pin the write to: the one our last write left. */
  at: string;
  /** What the writer kept of that write. */
  last: M;
}

export class OwnWrites<M> {
  readonly #chains = new Map<string, Chain<M>>();
  readonly #refused = new Map<string, string>();

  /**
   * Our last write to the object with `uid`, when the cache's version `cachedRv` is one our writes passed through
   * (the object is then where that write left it); undefined when the cache shows a version of someone else's.
   */
  recall(uid: string, cachedRv: string | undefined): Recalled<M> | undefined {
    const chain = this.#chains.get(uid);
    if (chain === undefined || cachedRv === undefined) return undefined;
    const index = chain.versions.indexOf(cachedRv);
    if (index < 0) return undefined;
    // The cache never shows an object's older version again: what is before it is of no more use.
    if (index > 0) chain.versions = chain.versions.slice(index);
    return { at: chain.versions[chain.versions.length - 1] as string, last: chain.last };
  }

  /** Our write pinned to `at` succeeded and left the object at `after`. */
  written(uid: string, at: string | undefined, after: string | undefined, last: M): void {
    this.#refused.delete(uid);
    if (at === undefined || after === undefined) {
      this.#chains.delete(uid);
      return;
    }
    const chain = this.#chains.get(uid);
    const versions =
      chain !== undefined && chain.versions[chain.versions.length - 1] === at
        ? [...chain.versions, after].slice(-MAX_CHAIN)
        : [at, after];
    this.#chains.set(uid, { versions, last });
  }

  /** Our write pinned to `at` was refused (409): the object moved on. The chain stays: it still tells versions apart. */
  refused(uid: string, at: string | undefined): void {
    if (at !== undefined) this.#refused.set(uid, at);
  }

  /** Whether a write pinned to `at` was refused already. */
  refusedAt(uid: string, at: string | undefined): boolean {
    return at !== undefined && this.#refused.get(uid) === at;
  }

  /** The object is gone. */
  forget(uid: string): void {
    this.#chains.delete(uid);
    this.#refused.delete(uid);
  }

  /** Forgets every object but those in `live`. */
  retain(live: ReadonlySet<string>): void {
    for (const uid of this.#chains.keys()) if (!live.has(uid)) this.#chains.delete(uid);
    for (const uid of this.#refused.keys()) if (!live.has(uid)) this.#refused.delete(uid);
  }
}
