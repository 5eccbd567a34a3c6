// The objects specs, benchmarks and the local stack apply or feed in: one
// builder per kind, with apiVersion and kind from @warmpool/api's ResourceTypes.
import {
  apiVersionOf,
  DRIVER_ANNOTATION,
  DRIVER_SANDBOXD,
  SandboxClaimType,
  SandboxEnvType,
  SandboxTemplateType,
  SandboxWarmPoolType,
  type FederationRecord,
  type KubeNode,
  type NodeInfo,
  type NodeInventory,
  type ObjectMeta,
  type PoolTarget,
  type SandboxClaim,
  type SandboxClaimSpec,
  type SandboxEnv,
  type SandboxEnvAutoscaling,
  type SandboxTemplate,
  type SandboxWarmPool,
} from '@warmpool/api';

/** An object whose name is always set, as server-side apply requires. */
export type Named<T extends { metadata: ObjectMeta }> = T & { metadata: ObjectMeta & { name: string } };

export interface TemplateOptions {
  /** `warmpool.dev/driver: sandboxd` unless false. */
  optIn?: boolean;
  annotations?: Record<string, string>;
}

/** A SandboxTemplate as a user writes it; no image ('' or undefined) gives a container without one. */
export function template(
  namespace: string,
  name: string,
  image: string | undefined,
  options: TemplateOptions = {},
): Named<SandboxTemplate> {
  const annotations = {
    ...(options.optIn === false ? {} : { [DRIVER_ANNOTATION]: DRIVER_SANDBOXD }),
    ...options.annotations,
  };
  return {
    apiVersion: apiVersionOf(SandboxTemplateType),
    kind: SandboxTemplateType.kind,
    metadata: { namespace, name, annotations },
    spec: {
      podTemplate: {
        spec: { containers: [image === undefined || image === '' ? { name: 'sandbox' } : { name: 'sandbox', image }] },
      },
    },
  };
}

/** A SandboxWarmPool as a user writes it; replicas undefined leaves the field out. */
export function warmPool(
  namespace: string,
  name: string,
  templateName: string,
  replicas: number | undefined,
): Named<SandboxWarmPool> {
  return {
    apiVersion: apiVersionOf(SandboxWarmPoolType),
    kind: SandboxWarmPoolType.kind,
    metadata: { namespace, name },
    spec: { ...(replicas === undefined ? {} : { replicas }), sandboxTemplateRef: { name: templateName } },
  };
}

/** A SandboxEnv of `members` (pool → scaling group), with optional autoscaling per group. */
export function sandboxEnv(
  namespace: string,
  name: string,
  members: Record<string, string>,
  autoscaling: SandboxEnvAutoscaling[] = [],
): Named<SandboxEnv> {
  return {
    apiVersion: apiVersionOf(SandboxEnvType),
    kind: SandboxEnvType.kind,
    metadata: { namespace, name },
    spec: {
      members: Object.entries(members).map(([pool, scalingGroup]) => ({ pool, scalingGroup })),
      ...(autoscaling.length > 0 ? { autoscaling } : {}),
    },
  };
}

export interface SandboxClaimOptions {
  annotations?: Record<string, string>;
  lifecycle?: SandboxClaimSpec['lifecycle'];
}

/** A SandboxClaim of `pool` as a user writes it. */
export function sandboxClaim(
  namespace: string,
  name: string,
  pool: string,
  options: SandboxClaimOptions = {},
): Named<SandboxClaim> {
  return {
    apiVersion: apiVersionOf(SandboxClaimType),
    kind: SandboxClaimType.kind,
    metadata: { namespace, name, ...(options.annotations ? { annotations: options.annotations } : {}) },
    spec: { warmPoolRef: { name: pool }, ...(options.lifecycle ? { lifecycle: options.lifecycle } : {}) },
  };
}

/** Objects as a Kubernetes List, for `kubectl apply -f -`. */
export function listManifest(...items: object[]): string {
  return `${JSON.stringify({ apiVersion: 'v1', kind: 'List', items }, null, 2)}\n`;
}

let uid = 0;

/** A template as an informer holds it (uid, resourceVersion, generation set), for in-process specs. */
export function templateObject(
  namespace: string,
  name: string,
  image: string | undefined,
  options: TemplateOptions = {},
): SandboxTemplate {
  const object = template(namespace, name, image, options);
  return { ...object, metadata: { ...object.metadata, uid: `tpl-${++uid}`, resourceVersion: '1', generation: 1 } };
}

/** A warm pool as an informer holds it, for in-process specs. */
export function poolObject(
  namespace: string,
  name: string,
  templateName: string,
  replicas: number | undefined,
  extra: Partial<SandboxWarmPool['metadata']> = {},
): SandboxWarmPool {
  const object = warmPool(namespace, name, templateName, replicas);
  return {
    ...object,
    metadata: { ...object.metadata, uid: `pool-${namespace}-${name}`, resourceVersion: '1', generation: 1, ...extra },
  };
}

export interface InventoryOptions {
  address?: string;
  publishedAt?: string;
  capacity?: number;
  claimed?: number;
  draining?: boolean;
  appliedGeneration?: number;
}

/** A node's NodeInventory with no pools, for in-process specs. */
export function inventoryObject(name: string, options: InventoryOptions = {}): NodeInventory {
  return {
    metadata: { name, resourceVersion: '1' },
    spec: { nodeName: name, address: options.address ?? `${name}.test:7071` },
    status: {
      pools: [],
      claimed: options.claimed ?? 0,
      draining: options.draining ?? false,
      atCapacity: false,
      ...(options.publishedAt !== undefined ? { publishedAt: options.publishedAt } : {}),
      ...(options.capacity !== undefined ? { capacity: options.capacity } : {}),
      ...(options.appliedGeneration !== undefined ? { appliedGeneration: options.appliedGeneration } : {}),
    },
  };
}

/** A Node vouching for `addresses` (default: the host of inventoryObject's default address), for in-process specs. */
export function kubeNodeObject(name: string, addresses: string[] = [`${name}.test`]): KubeNode {
  return {
    metadata: { name, resourceVersion: '1' },
    status: { addresses: addresses.map((address) => ({ type: 'InternalIP', address })) },
  };
}

/** What sandboxd's /v1/info answers, from `template|net|size` → target (and warm). */
export function infoOf(targets: Record<string, number>, warm: Record<string, number> = {}): NodeInfo {
  return {
    pools: Object.entries(targets).map(([id, target]) => {
      const [template = '', net = 'none', size = 'small'] = id.split('|');
      return { key: { template, net, size }, target, warm: warm[id] ?? 0, refilling: 0 };
    }),
    claimed: 0,
  };
}

/** What an agent that applied `pools` reports: each pool's target, all of it warm. */
export function appliedInfoOf(pools: readonly PoolTarget[]): NodeInfo {
  return {
    pools: pools.map((p) => ({
      key: { template: p.template, net: p.net, size: p.size },
      target: p.warm,
      warm: p.warm,
      refilling: 0,
    })),
    claimed: 0,
  };
}

/** A federation record without its cluster id, as a Reporter is given it (the cluster adds its own). */
export type MemberRecord = Omit<FederationRecord, 'clusterId'>;

/**
 * The federation record of one member pool of an Env: `idle` sandboxes idle and
 * as many desired, nothing running or pending, no autoscaling, unless `more`
 * says otherwise.
 */
export function federationRecord(
  member: Pick<FederationRecord, 'namespace' | 'envName' | 'memberPool' | 'scalingGroup'>,
  idle: number,
  more: Partial<MemberRecord> = {},
): MemberRecord {
  return {
    ...member,
    idle,
    running: 0,
    pending: 0,
    desired: idle,
    autoscalingEnabled: false,
    capacity: 0,
    saturatedForMs: 0,
    ...more,
  };
}
