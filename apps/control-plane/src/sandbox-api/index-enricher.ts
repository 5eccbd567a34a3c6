// What a node's entry does not say (owner address, tier, pool), looked up in
// the claim index for sandboxes the view knows only from a node: those
// claimed before this replica's claim events begin (the stream keeps the last
// 10 minutes). Each (sandbox, id) is looked up once; what is found is applied
// as a claim event dated at the claim, so it stands exactly as long as the
// node lists the sandbox.
import type { Logger } from '@warmpool/runtime';
import type { ClaimGrant } from '../provisioning/claim-service.js';
import { sandboxKey, type SandboxFacts } from './sandbox-object.js';
import type { SandboxChange, SandboxView } from './view.js';

export interface IndexEnricherOptions {
  view: SandboxView;
  lookup: (namespace: string, claimRef: string) => Promise<ClaimGrant | undefined>;
  logger: Logger;
  /** Lookups in flight at once (default 16). */
  concurrency?: number;
  /**
   * After a failed lookup (Redis not connected yet, or away), the sandbox is asked again this much later (default 1 s).
   */
  retryMs?: number;
}

/** Starts enriching; the answer stops it (no lookup result is applied after). */
export function enrichFromIndex(options: IndexEnricherOptions): () => void {
  const enricher = new IndexEnricher(options);
  return () => enricher.close();
}

class IndexEnricher {
  readonly #options: IndexEnricherOptions;
  readonly #concurrency: number;
  /** `namespace/name/id` of each sandbox looked up (or queued), so each is asked once. */
  readonly #asked = new Set<string>();
  readonly #retries = new Set<NodeJS.Timeout>();
  readonly #queue: SandboxFacts[] = [];
  readonly #unsubscribe: () => void;
  #running = 0;
  #closed = false;

  constructor(options: IndexEnricherOptions) {
    this.#options = options;
    this.#concurrency = options.concurrency ?? 16;
    this.#unsubscribe = options.view.subscribe((change) => this.#changed(change));
  }

  close(): void {
    this.#closed = true;
    for (const timer of this.#retries) clearTimeout(timer);
    this.#retries.clear();
    this.#unsubscribe();
  }

  #changed(change: SandboxChange): void {
    const { facts } = change.sandbox;
    const id = idOf(facts);
    if (change.type === 'DELETED') {
      this.#asked.delete(id);
      return;
    }
    if (facts.ownerAddr !== undefined || this.#asked.has(id)) return;
    this.#ask(id, facts);
  }

  #ask(id: string, facts: SandboxFacts): void {
    this.#asked.add(id);
    this.#queue.push(facts);
    this.#pump();
  }

  #pump(): void {
    while (!this.#closed && this.#running < this.#concurrency && this.#queue.length > 0) {
      const facts = this.#queue.shift() as SandboxFacts;
      this.#running++;
      void this.#options
        .lookup(facts.namespace, facts.name)
        .then(
          (grant) => this.#found(facts, grant),
          (err: unknown) => this.#retryLater(facts, err),
        )
        .finally(() => {
          this.#running--;
          this.#pump();
        });
    }
  }

  #found(facts: SandboxFacts, grant: ClaimGrant | undefined): void {
    if (this.#closed || grant === undefined || grant.id !== facts.id) return;
    const claimedAt = facts.claimedAt !== undefined ? Date.parse(facts.claimedAt) : Number.NaN;
    this.#options.view.applyClaimed(
      {
        namespace: facts.namespace,
        name: facts.name,
        id: grant.id,
        node: grant.node,
        deadline: grant.deadline,
        ownerAddr: grant.ownerAddr,
        tier: grant.tier,
        ...(grant.warmPool !== '' ? { pool: grant.warmPool } : {}),
      },
      Number.isFinite(claimedAt) ? claimedAt : 0,
    );
  }

  /**
   * Redis not connected yet (a replica's view fills from the inventories before its Redis connects) or away: asked
   * again a little later, while the sandbox is still listed without an owner address; a change in between asks at once.
   */
  #retryLater(facts: SandboxFacts, err: unknown): void {
    const id = idOf(facts);
    this.#asked.delete(id);
    this.#options.logger.debug('could not look a sandbox up in the claim index; retrying', {
      namespace: facts.namespace,
      name: facts.name,
      err,
    });
    const timer = setTimeout(() => {
      this.#retries.delete(timer);
      if (this.#closed || this.#asked.has(id)) return;
      const current = this.#options.view.get(facts.namespace, facts.name);
      if (current === undefined || current.facts.id !== facts.id || current.facts.ownerAddr !== undefined) return;
      this.#ask(id, current.facts);
    }, this.#options.retryMs ?? 1_000);
    timer.unref();
    this.#retries.add(timer);
  }
}

function idOf(facts: SandboxFacts): string {
  return `${sandboxKey(facts.namespace, facts.name)}/${facts.id}`;
}
