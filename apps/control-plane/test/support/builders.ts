// Plain objects for in-process specs.
import { DRIVER_ANNOTATION, DRIVER_SANDBOXD, type KubeNode, type NodeInfo, type NodeInventory, type SandboxTemplate, type SandboxWarmPool } from '@warmpool/api';

let uid = 0;

export function templateObject(namespace: string, name: string, image: string | undefined, options: { optIn?: boolean; annotations?: Record<string, string> } = {}): SandboxTemplate {
  const annotations = { ...(options.optIn === false ? {} : { [DRIVER_ANNOTATION]: DRIVER_SANDBOXD }), ...options.annotations };
  return {
    metadata: { namespace, name, uid: `tpl-${++uid}`, resourceVersion: '1', generation: 1, annotations },
    spec: { podTemplate: { spec: { containers: [image === undefined ? { name: 'main' } : { name: 'main', image }] } } },
  };
}

export function poolObject(namespace: string, name: string, templateName: string, replicas: number | undefined, extra: Partial<SandboxWarmPool['metadata']> = {}): SandboxWarmPool {
  return {
    metadata: { namespace, name, uid: `pool-${namespace}-${name}`, resourceVersion: '1', generation: 1, ...extra },
    spec: { ...(replicas === undefined ? {} : { replicas }), sandboxTemplateRef: { name: templateName } },
  };
}

export function inventoryObject(name: string, options: { address?: string; publishedAt?: string; capacity?: number; claimed?: number; draining?: boolean; appliedGeneration?: number } = {}): NodeInventory {
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

/** A Node vouching for `addresses` (default: the host of inventoryObject's default address). */
export function kubeNodeObject(name: string, addresses: string[] = [`${name}.test`]): KubeNode {
  return { metadata: { name, resourceVersion: '1' }, status: { addresses: addresses.map((address) => ({ type: 'InternalIP', address })) } };
}

export function infoOf(targets: Record<string, number>, warm: Record<string, number> = {}): NodeInfo {
  return {
    pools: Object.entries(targets).map(([id, target]) => {
      const [template = '', net = 'none', size = 'small'] = id.split('|');
      return { key: { template, net, size }, target, warm: warm[id] ?? 0, refilling: 0 };
    }),
    claimed: 0,
  };
}

/** A clock the spec moves by hand. */
export class ManualClock {
  #now: number;

  constructor(start = Date.parse('2030-01-01T00:00:00Z')) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  advance(ms: number): void {
    this.#now += ms;
  }

  iso(offsetMs = 0): string {
    return new Date(this.#now + offsetMs).toISOString();
  }
}
