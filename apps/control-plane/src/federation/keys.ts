// Where federation lives in Redis, under one configurable prefix (hub protocol 2):
//   <prefix>:v2:clusters            hash: cluster id → its directory entry (see hub-scripts.ts)
//   <prefix>:v2:records:<cluster>   hash: record field → FederationRecord JSON, PX TTL
//   <prefix>:v2:changes:<cluster>   sorted set: record field → the version that last changed it, PX TTL
//   <prefix>:v2:hint                channel: a cluster's records just changed (FederationHint JSON)
// Ids are URI-encoded, so ids holding '/' or ':' cannot collide.
// No key says where a cluster is reached: anyone who can write to the hub
// could point it anywhere, so peers' claim API URLs and tokens are configured
// per cluster (the peers file) and the hub only carries capacity.
import type { FederationRecord } from '@warmpool/api';

export const DEFAULT_FEDERATION_PREFIX = 'warmpool:federation';

/** The field of a record in its cluster's records hash. */
export function recordField(record: Pick<FederationRecord, 'namespace' | 'envName' | 'memberPool'>): string {
  return [record.namespace, record.envName, record.memberPool].map(encodeURIComponent).join('/');
}

export class FederationKeys {
  readonly prefix: string;

  constructor(prefix: string = DEFAULT_FEDERATION_PREFIX) {
    this.prefix = prefix;
  }

  get directory(): string {
    return `${this.prefix}:v2:clusters`;
  }

  records(clusterId: string): string {
    return `${this.prefix}:v2:records:${encodeURIComponent(clusterId)}`;
  }

  changes(clusterId: string): string {
    return `${this.prefix}:v2:changes:${encodeURIComponent(clusterId)}`;
  }

  get hintChannel(): string {
    return `${this.prefix}:v2:hint`;
  }
}
