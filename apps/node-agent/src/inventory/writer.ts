// Where the inventory goes. The publisher only needs these four calls; the
// Kubernetes implementation below is the production one, and anything else
// (a fleet benchmark hosting many agents, a test counting writes) can wrap or
// replace it without the publisher knowing.
import {
  apiVersionOf,
  KubeNodeType,
  NodeInventoryType,
  type KubeObject,
  type NodeInventory,
  type NodeInventorySpec,
  type NodeInventoryStatus,
  type OwnerReference,
} from '@warmpool/api';
import { ignoreNotFound, isNotFound, ResourceClient, type KubeConfig } from '@warmpool/kube';

export interface InventoryIdentity {
  /** The node's name, which is also the NodeInventory's. */
  name: string;
  spec: NodeInventorySpec;
  /** The Node object, when it exists: the inventory goes with it. */
  owner?: OwnerReference;
}

/** What the agent reads back from its NodeInventory after a (re)start. */
export interface InventoryReadBack {
  status: NodeInventoryStatus;
  annotations: Record<string, string>;
}

/** Each call gives up when `signal` aborts (the publisher closing), besides its own timeout. */
export interface InventoryWriter {
  /**
   * The status this node last published (and the object's annotations), or undefined when it has no NodeInventory yet.
   */
  readStatus(name: string, signal?: AbortSignal): Promise<InventoryReadBack | undefined>;
  /** An owner reference to the Node of that name, or undefined when there is no such Node. */
  nodeOwner(name: string, signal?: AbortSignal): Promise<OwnerReference | undefined>;
  /** Creates or updates the object's metadata and spec (not its status). */
  applyObject(identity: InventoryIdentity, signal?: AbortSignal): Promise<void>;
  /**
   * Writes the status; 'missing' when the object does not exist (so applyObject must run first).
   * Else the spec the object has now, as the write's answer carries it: how the publisher sees,
   * at no extra call, whether someone changed it.
   */
  applyStatus(name: string, status: NodeInventoryStatus, signal?: AbortSignal): Promise<StatusWritten | 'missing'>;
}

export interface StatusWritten {
  spec: NodeInventorySpec | undefined;
}

export const FIELD_MANAGER = 'warmpool-node-agent';

export interface KubeInventoryWriterOptions {
  /** Each apiserver call is abandoned after this long (default 10 s). */
  timeoutMs?: number;
}

/** Server-side apply of the node's NodeInventory, as field manager `warmpool-node-agent`. */
export class KubeInventoryWriter implements InventoryWriter {
  readonly #inventories: ResourceClient<NodeInventory>;
  readonly #nodes: ResourceClient<KubeObject>;
  readonly #timeoutMs: number;

  constructor(kubeConfig: KubeConfig, options: KubeInventoryWriterOptions = {}) {
    this.#inventories = new ResourceClient<NodeInventory>(kubeConfig, NodeInventoryType);
    this.#nodes = new ResourceClient<KubeObject>(kubeConfig, KubeNodeType);
    this.#timeoutMs = options.timeoutMs ?? 10_000;
  }

  async readStatus(name: string, signal?: AbortSignal): Promise<InventoryReadBack | undefined> {
    const inventory = await ignoreNotFound(this.#inventories.get({ name }, { signal: this.#signal(signal) }));
    return inventory === undefined
      ? undefined
      : { status: inventory.status ?? {}, annotations: inventory.metadata.annotations ?? {} };
  }

  async nodeOwner(name: string, signal?: AbortSignal): Promise<OwnerReference | undefined> {
    const uid = (await ignoreNotFound(this.#nodes.get({ name }, { signal: this.#signal(signal) })))?.metadata?.uid;
    return uid === undefined
      ? undefined
      : { apiVersion: apiVersionOf(KubeNodeType), kind: KubeNodeType.kind, name, uid };
  }

  async applyObject(identity: InventoryIdentity, signal?: AbortSignal): Promise<void> {
    await this.#inventories.apply(
      {
        metadata: { name: identity.name, ...(identity.owner ? { ownerReferences: [identity.owner] } : {}) },
        spec: identity.spec,
      },
      { fieldManager: FIELD_MANAGER, force: true, signal: this.#signal(signal) },
    );
  }

  async applyStatus(
    name: string,
    status: NodeInventoryStatus,
    signal?: AbortSignal,
  ): Promise<StatusWritten | 'missing'> {
    try {
      const written = await this.#inventories.applyStatus(
        { metadata: { name }, status },
        { fieldManager: FIELD_MANAGER, force: true, signal: this.#signal(signal) },
      );
      return { spec: written.spec };
    } catch (err) {
      if (isNotFound(err)) return 'missing';
      throw err;
    }
  }

  #signal(caller: AbortSignal | undefined): AbortSignal {
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    return caller === undefined ? timeout : AbortSignal.any([timeout, caller]);
  }
}
