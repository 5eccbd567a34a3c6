// The custom resources warmpool serves and consumes (docs/crds.md),
// written once. The upstream agent-sandbox shapes are fixed by upstream; ours
// live in warmpool.dev/v1alpha1. The schemas the apiserver enforces are in
// charts/warmpool/files/crds/ and must agree with these types.
import type { FederationRecord } from './federation.js';
import type { Condition, KubeObject, ObjectMeta, ResourceType } from './meta.js';

export const AGENTS_GROUP = 'agents.x-k8s.io';
export const EXTENSIONS_GROUP = 'extensions.agents.x-k8s.io';
export const UPSTREAM_VERSION = 'v1beta1';
export const WARMPOOL_GROUP = 'warmpool.dev';
export const WARMPOOL_VERSION = 'v1alpha1';

/** Opt-in: warmpool drives only pools whose template carries `warmpool.dev/driver: sandboxd`. */
export const DRIVER_ANNOTATION = 'warmpool.dev/driver';
export const DRIVER_SANDBOXD = 'sandboxd';
export const NET_ANNOTATION = 'warmpool.dev/net';
export const SIZE_ANNOTATION = 'warmpool.dev/size';
/** Label put on everything warmpool owns, and the selector of a pool's sandboxes. */
export const POOL_LABEL = 'warmpool.dev/pool';

export const SandboxTemplateType: ResourceType = {
  group: EXTENSIONS_GROUP,
  version: UPSTREAM_VERSION,
  plural: 'sandboxtemplates',
  kind: 'SandboxTemplate',
  namespaced: true,
};
export const SandboxWarmPoolType: ResourceType = {
  group: EXTENSIONS_GROUP,
  version: UPSTREAM_VERSION,
  plural: 'sandboxwarmpools',
  kind: 'SandboxWarmPool',
  namespaced: true,
};
export const SandboxClaimType: ResourceType = {
  group: EXTENSIONS_GROUP,
  version: UPSTREAM_VERSION,
  plural: 'sandboxclaims',
  kind: 'SandboxClaim',
  namespaced: true,
};
export const SandboxType: ResourceType = {
  group: AGENTS_GROUP,
  version: UPSTREAM_VERSION,
  plural: 'sandboxes',
  kind: 'Sandbox',
  namespaced: true,
};
export const NodeInventoryType: ResourceType = {
  group: WARMPOOL_GROUP,
  version: WARMPOOL_VERSION,
  plural: 'nodeinventories',
  kind: 'NodeInventory',
  namespaced: false,
};
export const SandboxEnvType: ResourceType = {
  group: WARMPOOL_GROUP,
  version: WARMPOOL_VERSION,
  plural: 'sandboxenvs',
  kind: 'SandboxEnv',
  namespaced: true,
};

export interface Container {
  name: string;
  image?: string;
  [field: string]: unknown;
}

export interface PodSpec {
  containers: Container[];
  [field: string]: unknown;
}

// ---- SandboxTemplate (extensions.agents.x-k8s.io/v1beta1) -------------------

export interface SandboxTemplateSpec {
  podTemplate: {
    metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
    spec: PodSpec;
  };
  networkPolicy?: Record<string, unknown>;
  networkPolicyManagement?: string;
  envVarsInjectionPolicy?: string;
  volumeClaimTemplatesPolicy?: string;
}

export interface SandboxTemplate extends KubeObject {
  metadata: ObjectMeta;
  spec: SandboxTemplateSpec;
}

// ---- SandboxWarmPool (extensions.agents.x-k8s.io/v1beta1) -------------------

export type UpdateStrategyType = 'Recreate' | 'OnReplenish';

export interface SandboxWarmPoolSpec {
  replicas?: number;
  sandboxTemplateRef: { name: string };
  updateStrategy?: { type?: UpdateStrategyType };
}

export interface SandboxWarmPoolStatus {
  replicas?: number;
  readyReplicas?: number;
  selector?: string;
  observedGeneration?: number;
  /**
   * warmpool's addition (Ready, Degraded). Our CRD schema carries it; upstream's
   * does not (server-side apply would refuse the whole write), so the control
   * plane writes it only where the installed CRD declares it, and
   * replicas/readyReplicas tell the story elsewhere.
   */
  conditions?: Condition[];
}

export interface SandboxWarmPool extends KubeObject {
  metadata: ObjectMeta;
  spec: SandboxWarmPoolSpec;
  status?: SandboxWarmPoolStatus;
}

// ---- SandboxClaim (extensions.agents.x-k8s.io/v1beta1) ----------------------

export type ShutdownPolicy = 'Delete' | 'DeleteForeground' | 'Retain';

export interface SandboxClaimSpec {
  warmPoolRef: { name: string };
  lifecycle?: { shutdownTime?: string; ttlSecondsAfterFinished?: number; shutdownPolicy?: ShutdownPolicy };
  additionalPodMetadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  env?: Array<{ name: string; value?: string }>;
  volumeClaimTemplates?: Array<Record<string, unknown>>;
}

export interface SandboxClaimStatus {
  conditions?: Condition[];
  sandbox?: { name?: string; podIPs?: string[] };
}

export interface SandboxClaim extends KubeObject {
  metadata: ObjectMeta;
  spec: SandboxClaimSpec;
  status?: SandboxClaimStatus;
}

/** warmpool's finalizer on a SandboxClaim it served: deleting the claim releases its sandbox first. */
export const SANDBOX_CLAIM_FINALIZER = 'warmpool.dev/release-sandbox';
/** The node-local id of a SandboxClaim's sandbox (the token is never in an annotation or status). */
export const SANDBOX_ID_ANNOTATION = 'warmpool.dev/sandbox-id';
/** The keys of the Secret named after a served SandboxClaim (owned by it) that carries the sandbox's token. */
export const SANDBOX_SECRET_KEYS = ['id', 'token', 'ownerAddr', 'deadline', 'node'] as const;
export type SandboxSecretKey = (typeof SANDBOX_SECRET_KEYS)[number];
/** That Secret's `type`, so tools (and the router) can tell it from a user's Secret of the same name. */
export const SANDBOX_SECRET_TYPE = 'warmpool.dev/sandbox';

// ---- Sandbox (agents.x-k8s.io/v1beta1) --------------------------------------
// warmpool never writes these to etcd (etcd stores intent, not one object per
// sandbox): the control plane serves them through the aggregation layer,
// synthesized from the nodes (./sandboxes.ts has their wire shapes). On a
// cluster with upstream's CRD instead, the same type reads upstream's.

export interface Sandbox extends KubeObject {
  metadata: ObjectMeta;
  spec?: {
    /** The pool it was (or is to be) claimed from (warmpool's; create names it). */
    warmPoolRef?: { name: string };
    /** The lease asked for at create (default 300 s). */
    ttlSeconds?: number;
    [field: string]: unknown;
  };
  status?: {
    conditions?: Condition[];
    /** The peer cluster serving it (a spilled Env claim); nodeName is then `<cluster>/<node>`. */
    cluster?: string;
    nodeName?: string;
    podIPs?: string[];
    /**
     * warmpool's additions: when the node reaps it (RFC 3339), host:port of the sandbox, warm or cold, sandboxd's id.
     */
    deadline?: string;
    ownerAddr?: string;
    tier?: string;
    sandboxID?: string;
  };
}

// ---- NodeInventory (warmpool.dev/v1alpha1, cluster-scoped) ------------------

export interface InventoryPool {
  template: string;
  net: string;
  size: string;
  target: number;
  warm: number;
  refilling: number;
  /** Claimed sandboxes of this key on the node (absent from agents that do not count them). */
  claimed?: number;
}

export interface InventoryEntry {
  id: string;
  template: string;
  net: string;
  size: string;
  claimRef?: string;
  deadline: string;
  /** RFC 3339: when it was claimed (a Sandbox's creationTimestamp). */
  claimedAt?: string;
}

/** Per-sandbox entries are optional and capped so a full node stays far below etcd's 1.5 MiB. */
export const MAX_INVENTORY_ENTRIES = 256;

export interface NodeInventorySpec {
  nodeName: string;
  /** The agent's advertise address, host:port. */
  address: string;
}

export interface NodeInventoryStatus {
  pools?: InventoryPool[];
  claimed?: number;
  /** How many sandboxes (warm + claimed) the node can hold; absent = unknown. */
  capacity?: number;
  draining?: boolean;
  atCapacity?: boolean;
  /** RFC 3339; the control plane judges staleness from it. */
  publishedAt?: string;
  /** The last SetPools generation the agent applied. */
  appliedGeneration?: number;
  entries?: InventoryEntry[];
  entriesTruncated?: boolean;
  /**
   * host:port where the node's sandboxes are reached (sandboxd's `owner_addr`), once the agent has learned it (from a
   * claim answer or sandboxd's info); kept across agent restarts. Read it with `ownerAddrOf`.
   */
  ownerAddr?: string;
}

export interface NodeInventory extends KubeObject {
  metadata: ObjectMeta;
  spec: NodeInventorySpec;
  status?: NodeInventoryStatus;
}

// ---- SandboxEnv (warmpool.dev/v1alpha1) --------------------------------------

export interface SandboxEnvMember {
  /** A SandboxWarmPool name in the Env's namespace. */
  pool: string;
  scalingGroup: string;
}

export interface SandboxEnvAutoscaling {
  scalingGroup: string;
  enabled: boolean;
  minReplicas?: number;
  maxReplicas?: number;
  targetIdle?: number;
}

export interface ScalingGroupStatus {
  /** `""` is the whole-Env row. */
  name: string;
  idle: number;
  running: number;
  pending: number;
  desired: number;
  autoscalingEnabled: boolean;
  /** -1 unbounded, 0 at ceiling, > 0 headroom. */
  capacity: number;
  saturatedFor?: string;
}

/**
 * One foreign member as `SandboxEnv.status.clusters` shows it: the federation record minus what the Env already says,
 * and without its age (which would make every status write a change).
 */
export type ForeignClusterMember = Omit<FederationRecord, 'namespace' | 'envName' | 'saturatedForMs'>;

export interface SandboxEnvSpec {
  members: SandboxEnvMember[];
  autoscaling?: SandboxEnvAutoscaling[];
}

export interface SandboxEnvStatus {
  scalingGroups?: ScalingGroupStatus[];
  clusters?: ForeignClusterMember[];
  observedGeneration?: number;
}

export interface SandboxEnv extends KubeObject {
  metadata: ObjectMeta;
  spec: SandboxEnvSpec;
  status?: SandboxEnvStatus;
}

// ---- CustomResourceDefinition (apiextensions.k8s.io/v1): the slice warmpool reads ----

export const CustomResourceDefinitionType: ResourceType = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  plural: 'customresourcedefinitions',
  kind: 'CustomResourceDefinition',
  namespaced: false,
};

/** The SandboxWarmPool CRD's name: ours or upstream's, whichever the cluster runs. */
export const SANDBOX_WARM_POOL_CRD = `${SandboxWarmPoolType.plural}.${SandboxWarmPoolType.group}`;

export interface JsonSchemaProps {
  type?: string;
  properties?: Record<string, JsonSchemaProps>;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
}

export interface CustomResourceDefinition extends KubeObject {
  spec?: {
    group?: string;
    versions?: Array<{
      name: string;
      served?: boolean;
      storage?: boolean;
      schema?: { openAPIV3Schema?: JsonSchemaProps };
    }>;
  };
}
