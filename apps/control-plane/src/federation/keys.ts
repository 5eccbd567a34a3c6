// Where federation lives in Redis, under one configurable prefix:
//   <prefix>:rec:<cluster>/<ns>/<env>/<pool>  one federation record (FederationEntry JSON), PX TTL
//   <prefix>:index:<cluster>                  that cluster's record keys (JSON array), PX TTL
//   <prefix>:hint                             channel: a cluster just reported (FederationHint JSON)
// Every part is URI-encoded, so ids holding '/' or ':' cannot collide.
// No key says where a cluster is reached: anyone who can write to the hub
// could point it anywhere, so peers' claim API URLs and tokens are configured
// per cluster (the peers file) and the hub only carries capacity.
import type { FederationRecord } from '@warmpool/api';

export const DEFAULT_FEDERATION_PREFIX = 'warmpool:federation';

export class FederationKeys {
  readonly prefix: string;

  constructor(prefix: string = DEFAULT_FEDERATION_PREFIX) {
    this.prefix = prefix;
  }

  record(record: Pick<FederationRecord, 'clusterId' | 'namespace' | 'envName' | 'memberPool'>): string {
    return `${this.prefix}:rec:${[record.clusterId, record.namespace, record.envName, record.memberPool].map(encodeURIComponent).join('/')}`;
  }

  index(clusterId: string): string {
    return `${this.prefix}:index:${encodeURIComponent(clusterId)}`;
  }

  /** SCAN pattern of every cluster's index key (glob characters in the prefix escaped). */
  get indexPattern(): string {
    return `${this.prefix.replace(/[*?[\]\\]/g, '\\$&')}:index:*`;
  }

  /** The cluster id of an index key, or undefined when it is not one. */
  clusterOfIndex(key: string): string | undefined {
    const head = `${this.prefix}:index:`;
    if (!key.startsWith(head)) return undefined;
    try {
      return decodeURIComponent(key.slice(head.length));
    } catch {
      return undefined;
    }
  }

  get hintChannel(): string {
    return `${this.prefix}:hint`;
  }
}
