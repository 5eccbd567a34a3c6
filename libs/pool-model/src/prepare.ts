// Validated, sorted, hashed inputs: sorting first is what makes the spread
// independent of input order, and integer indices keep the hot loops on typed arrays.
import { hashName, MAX_INDEX, nodeSalt } from './hashing.js';
import type { PoolDemand, SpreadNode } from './targets.js';

export interface Nodes {
  readonly names: string[];
  readonly room: Float64Array;
  readonly salt: Uint32Array;
  readonly index: Map<string, number>;
}

export interface Pools {
  readonly ids: string[];
  readonly replicas: Float64Array;
  readonly hash: Uint32Array;
  readonly index: Map<string, number>;
}

function byName(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function prepareNodes(nodes: readonly SpreadNode[]): Nodes {
  const seen = new Set<string>();
  const eligible: SpreadNode[] = [];
  for (const node of nodes) {
    if (typeof node.name !== 'string' || node.name === '')
      throw new TypeError('spread: every node needs a non-empty name');
    if (seen.has(node.name)) throw new RangeError(`spread: node "${node.name}" is listed twice`);
    seen.add(node.name);
    if (Number.isNaN(node.room)) throw new RangeError(`spread: node "${node.name}" has room NaN`);
    if (node.eligible !== false) eligible.push(node);
  }
  if (eligible.length > MAX_INDEX + 1)
    throw new RangeError(`spread: at most ${MAX_INDEX + 1} nodes, got ${eligible.length}`);
  eligible.sort((a, b) => byName(a.name, b.name));
  const n = eligible.length;
  const names = new Array<string>(n);
  const room = new Float64Array(n);
  const salt = new Uint32Array(n);
  const index = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const node = eligible[i] as SpreadNode;
    names[i] = node.name;
    room[i] = Math.max(0, Math.floor(node.room));
    salt[i] = nodeSalt(hashName(node.name));
    index.set(node.name, i);
  }
  return { names, room, salt, index };
}

export function preparePools(pools: readonly PoolDemand[]): Pools {
  if (pools.length > MAX_INDEX + 1) throw new RangeError(`spread: at most ${MAX_INDEX + 1} pools, got ${pools.length}`);
  const sorted = [...pools].sort((a, b) => byName(a.id, b.id));
  const p = sorted.length;
  const ids = new Array<string>(p);
  const replicas = new Float64Array(p);
  const hash = new Uint32Array(p);
  const index = new Map<string, number>();
  for (let i = 0; i < p; i++) {
    const pool = sorted[i] as PoolDemand;
    if (typeof pool.id !== 'string' || pool.id === '') throw new TypeError('spread: every pool needs a non-empty id');
    if (index.has(pool.id)) throw new RangeError(`spread: pool "${pool.id}" is listed twice`);
    if (!Number.isSafeInteger(pool.replicas) || pool.replicas < 0) {
      throw new RangeError(
        `spread: pool "${pool.id}" wants ${String(pool.replicas)} replicas; replicas must be a non-negative integer`,
      );
    }
    ids[i] = pool.id;
    replicas[i] = pool.replicas;
    hash[i] = hashName(pool.id);
    index.set(pool.id, i);
  }
  return { ids, replicas, hash, index };
}
