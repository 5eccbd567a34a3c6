import fc from 'fast-check';
import type { PoolDemand, SpreadNode, Targets } from '../src/index.js';

/** A target set as plain sorted records, so toEqual compares content and order alike. */
export function plain(targets: Targets): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const node of [...targets.keys()].sort()) {
    const held = targets.get(node) ?? new Map<string, number>();
    out[node] = Object.fromEntries([...held.entries()].sort(([a], [b]) => (a < b ? -1 : 1)));
  }
  return out;
}

export function poolTotal(targets: Targets, pool: string): number {
  let total = 0;
  for (const held of targets.values()) total += held.get(pool) ?? 0;
  return total;
}

export function nodeLoad(targets: Targets, node: string): number {
  let total = 0;
  for (const units of targets.get(node)?.values() ?? []) total += units;
  return total;
}

/** Units a node holds across all pools: what leaves with it. */
export function unitsOn(targets: Targets, node: string): number {
  return nodeLoad(targets, node);
}

export function totalUnits(targets: Targets): number {
  let total = 0;
  for (const node of targets.keys()) total += nodeLoad(targets, node);
  return total;
}

const name = fc.string({
  minLength: 1,
  maxLength: 10,
  unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789-.'),
});

export const poolsArb = (maxReplicas = 40): fc.Arbitrary<PoolDemand[]> =>
  fc.uniqueArray(fc.record({ id: name, replicas: fc.integer({ min: 0, max: maxReplicas }) }), {
    selector: (p) => p.id,
    minLength: 1,
    maxLength: 12,
  });

/** Nodes with ample room: the spread is never short of it. */
export const roomyNodesArb = (minLength = 1): fc.Arbitrary<SpreadNode[]> =>
  fc.uniqueArray(name, { minLength, maxLength: 12 }).map((names) => names.map((n) => ({ name: n, room: Infinity })));

/** Nodes with any room, some ineligible. */
export const anyNodesArb: fc.Arbitrary<SpreadNode[]> = fc.uniqueArray(
  fc.record({ name, room: fc.integer({ min: 0, max: 30 }), eligible: fc.boolean() }),
  { selector: (n) => n.name, minLength: 0, maxLength: 12 },
);
