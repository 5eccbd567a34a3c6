// Every replica's view of the claimed sandboxes, synthesized from what the
// nodes publish (NodeInventory status.entries[]) and the claim index's event
// stream (claims newer than a node's last publish), never from etcd objects
// of their own. It answers list and get from memory and hands watches their
// events, each with a resourceVersion.
//
// Which facts stand for a sandbox (namespace/name):
// - a claim event stands while its node has not published since the claim
//   (claim time after publishedAt − skew margin), or the node publishes it,
//   or the node's entries are truncated or absent (then until its deadline);
// - a node's entry stands unless the sandbox was released after that publish;
// - nothing stands past its deadline (the node reaps it then).
//
// resourceVersions are this replica's own: `tag · 2^32 + counter`, the tag
// random per process. A resourceVersion of another replica (or one older
// than the history kept) is answered 410 Gone, and the client relists.
import { randomInt } from 'node:crypto';
import { sameFacts, sandboxKey, ServedSandbox, type SandboxFacts } from './sandbox-object.js';

export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface SandboxChange {
  type: ChangeType;
  resourceVersion: number;
  /** For DELETED: the last state, at the deletion's resourceVersion. */
  sandbox: ServedSandbox;
  /** The state before a MODIFIED (a watch with a selector turns it into ADDED/DELETED). */
  previous?: ServedSandbox;
}

/** What one node last published. */
export interface NodeReport {
  /** Epoch ms of status.publishedAt; undefined when unknown. */
  publishedAtMs: number | undefined;
  /** The entries are not the node's whole set (capped, or not published at all). */
  partial: boolean;
  entries: readonly SandboxFacts[];
}

export interface SandboxViewOptions {
  now?: () => number;
  /** Allowance for the clocks of Redis (claim times) and the nodes (publishedAt) differing. Default 5 s. */
  skewMarginMs?: number;
  /**
   * Changes kept for watches to resume from (default 10 000: each holds a Sandbox, ≈ 1–2 KiB; the control plane runs in
   * a 256 MiB heap).
   */
  historySize?: number;
  /** The resourceVersion tag (default random). */
  tag?: number;
  /** How long a release is remembered against an older publish (default 10 min). */
  releaseMemoryMs?: number;
}

interface NodeState {
  publishedAtMs: number | undefined;
  partial: boolean;
  entries: Map<string, SandboxFacts>;
}

interface FeedRecord {
  facts: SandboxFacts;
  atMs: number;
}

const COUNTER_SPAN = 2 ** 32;
const MAX_TAG = 2 ** 20;

export class SandboxView {
  readonly #now: () => number;
  readonly #skewMarginMs: number;
  readonly #historySize: number;
  readonly #releaseMemoryMs: number;
  readonly #base: number;
  #counter = 0;
  readonly #nodes = new Map<string, NodeState>();
  /** The owning-node index: which node's entries name each sandbox. */
  readonly #entryNode = new Map<string, string>();
  readonly #feed = new Map<string, FeedRecord>();
  readonly #released = new Map<string, { id: string; atMs: number }>();
  readonly #served = new Map<string, ServedSandbox>();
  readonly #history: SandboxChange[] = [];
  readonly #listeners = new Set<(change: SandboxChange) => void>();

  constructor(options: SandboxViewOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#skewMarginMs = options.skewMarginMs ?? 5_000;
    this.#historySize = options.historySize ?? 10_000;
    this.#releaseMemoryMs = options.releaseMemoryMs ?? 10 * 60_000;
    const tag = options.tag ?? randomInt(1, MAX_TAG);
    this.#base = tag * COUNTER_SPAN;
  }

  get size(): number {
    return this.#served.size;
  }

  /** The current resourceVersion. */
  get resourceVersion(): string {
    return String(this.#base + this.#counter);
  }

  get(namespace: string, name: string): ServedSandbox | undefined {
    return this.#served.get(sandboxKey(namespace, name));
  }

  /** The node whose published entries name this sandbox, if any. */
  owningNode(namespace: string, name: string): string | undefined {
    return this.#entryNode.get(sandboxKey(namespace, name));
  }

  /** Every served sandbox (of one namespace when given). */
  *items(namespace?: string): IterableIterator<ServedSandbox> {
    for (const served of this.#served.values())
      if (namespace === undefined || served.facts.namespace === namespace) yield served;
  }

  /** A node published (or its inventory went: undefined). */
  applyNode(node: string, report: NodeReport | undefined): void {
    const before = this.#nodes.get(node);
    const touched = new Set<string>(before?.entries.keys() ?? []);
    if (report === undefined) {
      this.#nodes.delete(node);
    } else {
      const entries = new Map<string, SandboxFacts>();
      for (const facts of report.entries) entries.set(sandboxKey(facts.namespace, facts.name), facts);
      this.#nodes.set(node, { publishedAtMs: report.publishedAtMs, partial: report.partial, entries });
      for (const key of entries.keys()) touched.add(key);
    }
    for (const key of before?.entries.keys() ?? []) if (this.#entryNode.get(key) === node) this.#entryNode.delete(key);
    for (const key of this.#nodes.get(node)?.entries.keys() ?? []) this.#entryNode.set(key, node);
    // Claim events on this node are judged against the new publish too.
    for (const [key, record] of this.#feed)
      if (record.facts.node === node && record.facts.cluster === undefined) touched.add(key);
    for (const key of touched) this.#recompute(key);
  }

  /** A claim (or its renewal) from the claim index's stream, at `atMs` on Redis's clock. */
  applyClaimed(facts: SandboxFacts, atMs: number): void {
    const key = sandboxKey(facts.namespace, facts.name);
    const known = this.#feed.get(key);
    // A renewal keeps the claim's time.
    const claimedAt =
      known !== undefined && known.facts.id === facts.id ? known.facts.claimedAt : new Date(atMs).toISOString();
    this.#feed.set(key, {
      facts: { ...facts, ...(claimedAt !== undefined ? { claimedAt } : {}) },
      atMs: known !== undefined && known.facts.id === facts.id ? known.atMs : atMs,
    });
    const tombstone = this.#released.get(key);
    if (tombstone !== undefined && tombstone.id !== facts.id) this.#released.delete(key);
    this.#recompute(key);
  }

  /** A release from the claim index's stream. */
  applyReleased(namespace: string, name: string, id: string, atMs: number): void {
    const key = sandboxKey(namespace, name);
    if (this.#feed.get(key)?.facts.id === id) this.#feed.delete(key);
    this.#released.set(key, { id, atMs });
    this.#recompute(key);
  }

  /** Drops what passed its deadline, and old memories. Call about every second. */
  sweep(): void {
    const now = this.#now();
    for (const [key, record] of this.#feed) if (Date.parse(record.facts.deadline) <= now) this.#feed.delete(key);
    for (const [key, tombstone] of this.#released)
      if (tombstone.atMs < now - this.#releaseMemoryMs) this.#released.delete(key);
    const due: string[] = [];
    for (const [key, served] of this.#served) if (Date.parse(served.facts.deadline) <= now) due.push(key);
    for (const key of due) this.#recompute(key);
  }

  subscribe(listener: (change: SandboxChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * The changes after `resourceVersion`, for a watch to replay, or 'gone' when
   * it is not this replica's or older than the history kept (410).
   */
  changesSince(resourceVersion: number): SandboxChange[] | 'gone' {
    const counter = resourceVersion - this.#base;
    if (!Number.isSafeInteger(counter) || counter < 0 || counter > this.#counter) return 'gone';
    if (counter === this.#counter) return [];
    // Every change has the next resourceVersion, so the history is consecutive.
    const oldest = this.#history[0]?.resourceVersion;
    if (oldest === undefined || resourceVersion < oldest - 1) return 'gone';
    return this.#history.slice(resourceVersion - oldest + 1);
  }

  #recompute(key: string): void {
    const facts = this.#standing(key);
    const current = this.#served.get(key);
    if (facts === undefined) {
      if (current === undefined) return;
      this.#served.delete(key);
      const rv = this.#next();
      this.#emit({ type: 'DELETED', resourceVersion: rv, sandbox: new ServedSandbox(current.facts, String(rv)) });
      return;
    }
    if (current !== undefined && sameFacts(current.facts, facts)) return;
    const rv = this.#next();
    const served = new ServedSandbox(facts, String(rv));
    this.#served.set(key, served);
    this.#emit(
      current === undefined
        ? { type: 'ADDED', resourceVersion: rv, sandbox: served }
        : { type: 'MODIFIED', resourceVersion: rv, sandbox: served, previous: current },
    );
  }

  #standing(key: string): SandboxFacts | undefined {
    const now = this.#now();
    const node = this.#entryNode.get(key);
    const entry = node === undefined ? undefined : this.#nodes.get(node)?.entries.get(key);
    const record = this.#feed.get(key);
    if (record !== undefined && Date.parse(record.facts.deadline) > now && this.#feedStands(key, record)) {
      return entry !== undefined && entry.id === record.facts.id ? merged(record.facts, entry) : record.facts;
    }
    if (entry === undefined || node === undefined || Date.parse(entry.deadline) <= now) return undefined;
    const tombstone = this.#released.get(key);
    const publishedAtMs = this.#nodes.get(node)?.publishedAtMs ?? 0;
    if (tombstone !== undefined && tombstone.id === entry.id && tombstone.atMs > publishedAtMs - this.#skewMarginMs)
      return undefined;
    return record !== undefined && record.facts.id === entry.id ? merged(record.facts, entry) : entry;
  }

  #feedStands(key: string, record: FeedRecord): boolean {
    // Another cluster's node never publishes here: its claim stands until its release event or its deadline.
    if (record.facts.cluster !== undefined) return true;
    const state = this.#nodes.get(record.facts.node);
    if (state === undefined || state.publishedAtMs === undefined || state.partial) return true;
    if (state.entries.get(key)?.id === record.facts.id) return true;
    return record.atMs > state.publishedAtMs - this.#skewMarginMs;
  }

  #next(): number {
    this.#counter += 1;
    return this.#base + this.#counter;
  }

  #emit(change: SandboxChange): void {
    this.#history.push(change);
    // Trimmed in chunks, so a busy view does not shift the array on every change.
    if (this.#history.length > this.#historySize * 1.25)
      this.#history.splice(0, this.#history.length - this.#historySize);
    for (const listener of this.#listeners) listener(change);
  }
}

/** A claim event's facts with what the node adds (its claim time, a later deadline). */
function merged(fromIndex: SandboxFacts, fromNode: SandboxFacts): SandboxFacts {
  const deadline =
    Date.parse(fromNode.deadline) > Date.parse(fromIndex.deadline) ? fromNode.deadline : fromIndex.deadline;
  const claimedAt = fromNode.claimedAt ?? fromIndex.claimedAt;
  return {
    ...fromIndex,
    deadline,
    ...(claimedAt !== undefined ? { claimedAt } : {}),
    ...(fromIndex.key === undefined && fromNode.key !== undefined ? { key: fromNode.key } : {}),
    ...(fromIndex.pool === undefined && fromNode.pool !== undefined ? { pool: fromNode.pool } : {}),
  };
}
