// The fleet benchmarks' catalogue: long-tailed like real catalogues (most
// pools want a few warm sandboxes, some many), seeded so every run and every
// benchmark (the fleet over a real apiserver, the run in process) measures the
// same pools, plus one pool spread over every node to patch.
import type { PoolSpec } from './pools.ts';
import { prng } from './prng.ts';

export function fleetPoolSpecs(count: number): PoolSpec[] {
  const random = prng(5);
  return Array.from({ length: count }, (_, i) => {
    const roll = random();
    const replicas =
      roll < 0.7
        ? 5 + Math.floor(random() * 16)
        : roll < 0.95
          ? 20 + Math.floor(random() * 61)
          : 100 + Math.floor(random() * 301);
    return {
      name: `pool-${String(i).padStart(3, '0')}`,
      image: `registry.example/team-${i % 17}/image-${i}:v1`,
      replicas,
    };
  });
}

/** The fan-out probe: a pool spread over every node, toggled 1 ↔ 2 per node. */
export function fanoutPool(nodes: number): { name: string; image: string; low: number; high: number } {
  return { name: 'fanout', image: 'registry.example/bench/fanout:1', low: nodes, high: 2 * nodes };
}
