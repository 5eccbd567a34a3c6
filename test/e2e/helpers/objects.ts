// Reading the objects the spec checks, through kubectl so it works the same
// on any cluster. Shapes come from @warmpool/api.
import { DEFAULT_NET, DEFAULT_SIZE, type InventoryPool, type NodeInventory, type SandboxWarmPool } from '@warmpool/api';
import { listManifest, template, warmPool } from '@warmpool/harness';
import { kubectlOk, type E2eTarget } from './target.js';

interface List<T> {
  items: T[];
}

async function getJson<T>(target: E2eTarget, args: string[]): Promise<T> {
  return JSON.parse(await kubectlOk(target, [...args, '-o', 'json'])) as T;
}

export function getPool(target: E2eTarget, name: string): Promise<SandboxWarmPool> {
  return getJson<SandboxWarmPool>(target, [
    'get',
    'sandboxwarmpools.extensions.agents.x-k8s.io',
    name,
    '-n',
    target.namespace,
  ]);
}

export async function listInventories(target: E2eTarget): Promise<NodeInventory[]> {
  return (await getJson<List<NodeInventory>>(target, ['get', 'nodeinventories.warmpool.dev'])).items;
}

export async function listNodeNames(target: E2eTarget): Promise<string[]> {
  return (await getJson<List<{ metadata: { name: string } }>>(target, ['get', 'nodes'])).items.map(
    (n) => n.metadata.name,
  );
}

export async function countSandboxObjects(target: E2eTarget): Promise<number> {
  return (await getJson<List<unknown>>(target, ['get', 'sandboxes.agents.x-k8s.io', '-A'])).items.length;
}

/** The inventory's row for a template with the default net and size, if the node has that pool. */
export function poolRow(inventory: NodeInventory, template: string): InventoryPool | undefined {
  return inventory.status?.pools?.find(
    (p) => p.template === template && p.net === DEFAULT_NET && p.size === DEFAULT_SIZE,
  );
}

/** Σ of the targets every NodeInventory reports for the template. */
export function totalTarget(inventories: NodeInventory[], template: string): number {
  return inventories.reduce((sum, inventory) => sum + (poolRow(inventory, template)?.target ?? 0), 0);
}

/** A template opting in to warmpool and a warm pool over it, as one List for `kubectl apply -f -`. */
export function poolManifest(namespace: string, name: string, image: string, replicas: number): string {
  return listManifest(template(namespace, name, image), warmPool(namespace, name, name, replicas));
}
