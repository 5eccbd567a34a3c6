// A served Sandbox, built from what is known of one claim (its facts), and
// its Table row for `kubectl get`. Pure: the view decides which facts stand.
import { createHash } from 'node:crypto';
import { apiVersionOf, POOL_LABEL, SandboxType, type PoolKey, type Sandbox, type TableColumn } from '@warmpool/api';
import type { ClaimGrant } from '../provisioning/claim-service.js';

export const SANDBOX_API_VERSION = apiVersionOf(SandboxType);
/** The sandboxd id of the sandbox behind a Sandbox. */
export const SANDBOX_ID_ANNOTATION = 'warmpool.dev/sandbox-id';

/** One claimed sandbox as the nodes and the claim index describe it. */
export interface SandboxFacts {
  namespace: string;
  /** The claim's name: the claimRef (HTTP claims) or the SandboxClaim's name. */
  name: string;
  /** sandboxd's id. */
  id: string;
  node: string;
  /** RFC 3339. */
  deadline: string;
  key?: PoolKey;
  pool?: string;
  tier?: string;
  ownerAddr?: string;
  /** RFC 3339. */
  claimedAt?: string;
  /**
   * The peer cluster that serves it (a spilled Env claim); `node` is then that cluster's node, which no node of this
   * cluster publishes.
   */
  cluster?: string;
}

/** The node as a Sandbox names it: `<cluster>/<node>` for a sandbox another cluster serves, so it never looks local. */
export function nodeNameOf(facts: SandboxFacts): string {
  return facts.cluster === undefined ? facts.node : `${facts.cluster}/${facts.node}`;
}

/** What the claim index says of a served claim, as a Sandbox's facts. */
export function factsOfGrant(namespace: string, name: string, grant: ClaimGrant): SandboxFacts {
  return {
    namespace,
    name,
    id: grant.id,
    node: grant.node,
    deadline: grant.deadline,
    pool: grant.warmPool,
    tier: grant.tier,
    ownerAddr: grant.ownerAddr,
    ...(grant.cluster !== undefined ? { cluster: grant.cluster } : {}),
  };
}

export function sandboxKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** The owner address's host: what a client dials (the Sandbox's podIPs). */
export function hostOf(ownerAddr: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(ownerAddr);
  if (bracketed !== null) return bracketed[1] ?? ownerAddr;
  const colon = ownerAddr.lastIndexOf(':');
  return colon > 0 && ownerAddr.indexOf(':') === colon ? ownerAddr.slice(0, colon) : ownerAddr;
}

/** A uid stable across replicas and restarts for the same sandbox (namespace, name, sandbox id). */
function uidOf(facts: SandboxFacts): string {
  const hex = createHash('sha256').update(`${facts.namespace}/${facts.name}/${facts.id}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${((parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export function sandboxObject(facts: SandboxFacts, resourceVersion: string): Sandbox {
  const status: NonNullable<Sandbox['status']> = {
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        reason: 'Claimed',
        message:
          facts.cluster === undefined
            ? `claimed on node ${facts.node}`
            : `claimed on node ${facts.node} of cluster ${facts.cluster}`,
        ...(facts.claimedAt !== undefined ? { lastTransitionTime: facts.claimedAt } : {}),
      },
    ],
    nodeName: nodeNameOf(facts),
    podIPs: facts.ownerAddr !== undefined ? [hostOf(facts.ownerAddr)] : [],
    deadline: facts.deadline,
    sandboxID: facts.id,
  };
  if (facts.ownerAddr !== undefined) status.ownerAddr = facts.ownerAddr;
  if (facts.tier !== undefined) status.tier = facts.tier;
  if (facts.cluster !== undefined) status.cluster = facts.cluster;
  return {
    apiVersion: SANDBOX_API_VERSION,
    kind: SandboxType.kind,
    metadata: {
      name: facts.name,
      namespace: facts.namespace,
      uid: uidOf(facts),
      resourceVersion,
      ...(facts.claimedAt !== undefined ? { creationTimestamp: facts.claimedAt } : {}),
      ...(facts.pool !== undefined ? { labels: { [POOL_LABEL]: facts.pool } } : {}),
      annotations: { [SANDBOX_ID_ANNOTATION]: facts.id },
    },
    spec: facts.pool !== undefined ? { warmPoolRef: { name: facts.pool } } : {},
    status,
  };
}

/** Same facts as far as a client can see (the resourceVersion aside). */
export function sameFacts(a: SandboxFacts, b: SandboxFacts): boolean {
  return (
    a.id === b.id &&
    a.node === b.node &&
    a.deadline === b.deadline &&
    a.pool === b.pool &&
    a.tier === b.tier &&
    a.ownerAddr === b.ownerAddr &&
    a.claimedAt === b.claimedAt &&
    a.cluster === b.cluster &&
    a.key?.template === b.key?.template &&
    a.key?.net === b.key?.net &&
    a.key?.size === b.key?.size
  );
}

export const TABLE_COLUMNS: TableColumn[] = [
  {
    name: 'Name',
    type: 'string',
    format: 'name',
    description: "The claim's name (claimRef or SandboxClaim name)",
    priority: 0,
  },
  { name: 'Node', type: 'string', format: '', description: 'The node holding the sandbox', priority: 0 },
  { name: 'Pool', type: 'string', format: '', description: 'The SandboxWarmPool it was claimed from', priority: 0 },
  {
    name: 'Tier',
    type: 'string',
    format: '',
    description: 'warm (handed over from the pool) or cold (booted for the claim)',
    priority: 0,
  },
  {
    name: 'Deadline',
    type: 'string',
    format: 'date-time',
    description: 'When the node reaps it unless renewed',
    priority: 0,
  },
  { name: 'Age', type: 'string', format: '', description: 'Since it was claimed', priority: 0 },
  { name: 'Owner', type: 'string', format: '', description: 'host:port of the sandbox', priority: 1 },
  { name: 'Sandbox ID', type: 'string', format: '', description: "sandboxd's id", priority: 1 },
  { name: 'Key', type: 'string', format: '', description: 'The pool key: template/net/size', priority: 1 },
  {
    name: 'Cluster',
    type: 'string',
    format: '',
    description: 'The peer cluster that serves it (a spilled Env claim); empty for this cluster',
    priority: 1,
  },
];

/**
 * A Sandbox as served: its facts and the resourceVersion of its last change.
 * The object is built when asked for, not kept: the view holds only facts
 * (a kept object tripled the memory per sandbox).
 */
export class ServedSandbox {
  readonly facts: SandboxFacts;
  readonly resourceVersion: string;

  constructor(facts: SandboxFacts, resourceVersion: string) {
    this.facts = facts;
    this.resourceVersion = resourceVersion;
  }

  get object(): Sandbox {
    return sandboxObject(this.facts, this.resourceVersion);
  }
}

export function tableCells(served: ServedSandbox, now: number): unknown[] {
  const { facts } = served;
  return [
    facts.name,
    nodeNameOf(facts),
    facts.pool ?? '<unknown>',
    facts.tier ?? '<unknown>',
    facts.deadline,
    facts.claimedAt === undefined ? '<unknown>' : humanDuration(now - Date.parse(facts.claimedAt)),
    facts.ownerAddr ?? '<unknown>',
    facts.id,
    facts.key === undefined ? '<unknown>' : `${facts.key.template}/${facts.key.net}/${facts.key.size}`,
    facts.cluster ?? '',
  ];
}

/** kubectl's short durations: 45s, 3m12s, 5h, 3d. */
export function humanDuration(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return `${minutes}m${seconds % 60 === 0 ? '' : `${seconds % 60}s`}`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h`;
  return `${Math.floor(hours / 24)}d`;
}
