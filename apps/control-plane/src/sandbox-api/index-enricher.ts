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

export function enrichFromIndex(options: IndexEnricherOptions): () => void {
  const { view, lookup, logger } = options;
  const concurrency = options.concurrency ?? 16;
  const retryMs = options.retryMs ?? 1_000;
  const asked = new Set<string>();
  const retries = new Set<NodeJS.Timeout>();
  const queue: SandboxFacts[] = [];
  let running = 0;
  let closed = false;

  const pump = (): void => {
    while (!closed && running < concurrency && queue.length > 0) {
      const facts = queue.shift() as SandboxFacts;
      running++;
      void lookup(facts.namespace, facts.name)
        .then(
          (grant) => {
            if (closed || grant === undefined || grant.id !== facts.id) return;
            const claimedAt = facts.claimedAt !== undefined ? Date.parse(facts.claimedAt) : Number.NaN;
            view.applyClaimed(
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
          },
          (err: unknown) => {
            // Redis not connected yet (a replica's view fills from the inventories before its Redis connects) or
            // away: asked again a little later, while the sandbox is still listed; a change in between asks at once.
            const id = `${sandboxKey(facts.namespace, facts.name)}/${facts.id}`;
            asked.delete(id);
            logger.debug('could not look a sandbox up in the claim index; retrying', {
              namespace: facts.namespace,
              name: facts.name,
              err,
            });
            const timer = setTimeout(() => {
              retries.delete(timer);
              if (closed || asked.has(id)) return;
              const current = view.get(facts.namespace, facts.name);
              if (current === undefined || current.facts.id !== facts.id || current.facts.ownerAddr !== undefined)
                return;
              asked.add(id);
              queue.push(current.facts);
              pump();
            }, retryMs);
            timer.unref();
            retries.add(timer);
          },
        )
        .finally(() => {
          running--;
          pump();
        });
    }
  };

  const unsubscribe = view.subscribe((change: SandboxChange) => {
    const { facts } = change.sandbox;
    const id = `${sandboxKey(facts.namespace, facts.name)}/${facts.id}`;
    if (change.type === 'DELETED') {
      asked.delete(id);
      return;
    }
    if (facts.ownerAddr !== undefined || asked.has(id)) return;
    asked.add(id);
    queue.push(facts);
    pump();
  });
  return () => {
    closed = true;
    for (const timer of retries) clearTimeout(timer);
    retries.clear();
    unsubscribe();
  };
}
