// get of one Sandbox. The view answers from memory; a sandbox it does not
// show yet (claimed a moment ago, its event still on the way) is looked up in
// the claim index, and its node is asked whether it still holds it (GET
// /v1/sandboxes?claim_ref=), with a short timeout: a node that does not
// answer in time does not hold the request up, the index's record answers.
import type { TolerantSandboxRow } from '@warmpool/api';
import { ClaimFailure, type ClaimGrant } from '../provisioning/claim-service.js';
import { factsOfGrant, ServedSandbox, type SandboxFacts } from './sandbox-object.js';
import type { SandboxView } from './view.js';

export interface SandboxReaderOptions {
  view: SandboxView;
  /** The claim index (undefined: provisioning off, the view alone answers). */
  lookup?: (namespace: string, claimRef: string) => Promise<ClaimGrant | undefined>;
  /** The node's claims (the reader finds the one by id); rejects on timeout or when the node cannot be asked. */
  askNode?: (node: string, claimRef: string) => Promise<TolerantSandboxRow[]>;
}

export class SandboxReader {
  readonly #options: SandboxReaderOptions;

  constructor(options: SandboxReaderOptions) {
    this.#options = options;
  }

  async get(namespace: string, name: string): Promise<ServedSandbox | undefined> {
    const { view, lookup, askNode } = this.#options;
    const served = view.get(namespace, name);
    if (served !== undefined) return served;
    let grant: ClaimGrant | undefined;
    try {
      grant = await lookup?.(namespace, name);
    } catch (err) {
      // Redis away: the view is all there is.
      if (!(err instanceof ClaimFailure)) throw err;
    }
    if (grant === undefined) return undefined;
    const facts: SandboxFacts = factsOfGrant(namespace, name, grant);
    if (askNode !== undefined) {
      let rows: TolerantSandboxRow[] | undefined;
      try {
        rows = await askNode(grant.node, `${namespace}/${name}`);
      } catch {
        rows = undefined; // no answer in time: the index's record stands
      }
      if (rows !== undefined) {
        const row = rows.find((r) => r.id === grant.id);
        if (row === undefined) return undefined; // released on the node
        facts.key = row.key;
        if (row.claimed_at !== undefined) facts.claimedAt = row.claimed_at;
        if (Date.parse(row.deadline) > Date.parse(facts.deadline)) facts.deadline = row.deadline;
      }
    }
    return new ServedSandbox(facts, view.resourceVersion);
  }
}
