// A served claim for specs that need one and care about a few of its fields.
import type { ClaimGrant } from '../../src/provisioning/claim-service.js';

/** A warm grant of sandbox sb_1 on node-1, with `fields` over it. */
export function aGrant<T extends Partial<ClaimGrant> & { fresh?: true }>(fields: T = {} as T): ClaimGrant & T {
  return {
    id: 'sb_1',
    token: 'sandbox-token',
    deadline: '2030-01-01T01:00:00Z',
    ownerAddr: '10.0.0.7:9090',
    node: 'node-1',
    namespace: 'ns',
    warmPool: 'pool',
    claimRef: 'c-1',
    tier: 'warm',
    door: 'http',
    owner: 'd',
    ...fields,
  };
}
