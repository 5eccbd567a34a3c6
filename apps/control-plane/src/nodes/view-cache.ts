// The tracker's node views, kept between reads: a view is rebuilt only when
// something it depends on may have moved. Invariant: views(now) equals a view
// built afresh for every record at `now`, given that the tracker marks a name
// stale on every change to its record. What moves with no change to a record
// is covered here: time (a view records the first moment it may read
// differently: the inventory's staleness bound, the agent answer's TTL) and the
// highest issued generation (a view above it is rebuilt when it moves; every
// view when it moves down or to or from undefined, which happens at a term's
// start and end).

export interface Built<V> {
  view: V;
  /** The first clock time at which the view may read differently (Infinity: never by itself). */
  until: number;
  /** Whether its verdict depends on the issued generation moving up (its applied generation is above it). */
  aboveIssued: boolean;
}

export class ViewCache<V extends { name: string }> {
  readonly #built = new Map<string, Built<V>>();
  readonly #stale = new Set<string>();
  /** Views rebuilt or dropped since the last takeChanged(); undefined: every view (the caller cannot tell which). */
  #changed: Set<string> | undefined = undefined;
  #sorted: V[] = [];
  #order = new Map<string, number>();
  #membership = true;
  #nextUntil = Number.POSITIVE_INFINITY;
  #issued: number | undefined;
  #issuedSeen = false;

  /** The record changed (or went): its view is rebuilt at the next read. */
  stale(name: string): void {
    this.#stale.add(name);
  }

  /** Every view is rebuilt at the next read. */
  staleAll(names: Iterable<string>): void {
    for (const name of names) this.#stale.add(name);
  }

  /** The view as of the last read. */
  get(name: string): V | undefined {
    return this.#built.get(name)?.view;
  }

  /** Names whose view was rebuilt or dropped since the last call; undefined when that cannot be told (all). */
  takeChanged(): ReadonlySet<string> | undefined {
    const changed = this.#changed;
    this.#changed = new Set();
    return changed;
  }

  /** Every view sorted by name; `build(name)` rebuilds one (undefined: the record is gone). */
  views(
    now: number,
    issued: number | undefined,
    names: () => Iterable<string>,
    build: (name: string) => Built<V> | undefined,
  ): readonly V[] {
    this.#issuedMoved(issued, names);
    if (now >= this.#nextUntil) for (const [name, built] of this.#built) if (now >= built.until) this.#stale.add(name);
    if (this.#stale.size === 0) return this.#sorted;
    const sorted = this.#sorted.slice();
    for (const name of this.#stale) {
      const made = build(name);
      this.#changed?.add(name);
      const index = this.#order.get(name);
      if (made === undefined) {
        if (this.#built.delete(name)) this.#membership = true;
        continue;
      }
      this.#built.set(name, made);
      if (index === undefined) this.#membership = true;
      else sorted[index] = made.view;
    }
    this.#stale.clear();
    let until = Number.POSITIVE_INFINITY;
    for (const built of this.#built.values()) if (built.until < until) until = built.until;
    this.#nextUntil = until;
    if (this.#membership) {
      this.#sorted = [...this.#built.values()].map((built) => built.view).sort(byName);
      this.#order = new Map(this.#sorted.map((view, i) => [view.name, i]));
      this.#membership = false;
    } else this.#sorted = sorted;
    return this.#sorted;
  }

  #issuedMoved(issued: number | undefined, names: () => Iterable<string>): void {
    if (this.#issuedSeen && issued === this.#issued) return;
    const before = this.#issued;
    const first = !this.#issuedSeen;
    this.#issued = issued;
    this.#issuedSeen = true;
    if (first) return;
    if (before === undefined || issued === undefined || issued < before) this.staleAll(names());
    else for (const [name, built] of this.#built) if (built.aboveIssued) this.#stale.add(name);
  }
}

function byName(a: { name: string }, b: { name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
