// Step 1 of the spread: each pool's even, room-blind targets by rendezvous
// hashing. Sparse: a pool with r < nodes replicas has r entries.
import { affinity, indexOfRankKey, rankKey } from './hashing.js';
import type { Nodes, Pools } from './prepare.js';

/** Above this many winners a full typed-array sort beats the bounded heap. */
const HEAP_LIMIT = 128;

/** Writes the k nodes of highest affinity to the pool into out[0..k). */
function topNodes(
  poolHash: number,
  salt: Uint32Array,
  k: number,
  heap: Float64Array,
  keys: Float64Array,
  out: Int32Array,
): void {
  const n = salt.length;
  if (k <= HEAP_LIMIT) {
    // A bounded min-heap of rank keys: most nodes lose to the root with one comparison.
    let size = 0;
    for (let i = 0; i < n; i++) {
      const key = rankKey(affinity(poolHash, salt[i] as number), i);
      if (size < k) {
        let at = size++;
        while (at > 0) {
          const parent = (at - 1) >> 1;
          if ((heap[parent] as number) <= key) break;
          heap[at] = heap[parent] as number;
          at = parent;
        }
        heap[at] = key;
      } else if (key > (heap[0] as number)) {
        let at = 0;
        for (;;) {
          const left = 2 * at + 1;
          if (left >= size) break;
          const right = left + 1;
          const child = right < size && (heap[right] as number) < (heap[left] as number) ? right : left;
          if ((heap[child] as number) >= key) break;
          heap[at] = heap[child] as number;
          at = child;
        }
        heap[at] = key;
      }
    }
    for (let j = 0; j < k; j++) out[j] = indexOfRankKey(heap[j] as number);
  } else {
    const view = keys.subarray(0, n);
    for (let i = 0; i < n; i++) view[i] = rankKey(affinity(poolHash, salt[i] as number), i);
    view.sort();
    for (let j = 0; j < k; j++) out[j] = indexOfRankKey(view[n - 1 - j] as number);
  }
}

/** Ideal targets, sparse: pool p owns entries [start[p], start[p+1]), node indices ascending. */
export interface Ideal {
  readonly start: Int32Array;
  readonly node: Int32Array;
  readonly count: Float64Array;
}

export function idealTargets(pools: Pools, nodes: Nodes): Ideal {
  const n = nodes.names.length;
  const p = pools.ids.length;
  let total = 0;
  for (let i = 0; i < p; i++) total += Math.min(pools.replicas[i] as number, n);
  const start = new Int32Array(p + 1);
  const node = new Int32Array(total);
  const count = new Float64Array(total);
  const heap = new Float64Array(Math.min(HEAP_LIMIT, n));
  const keys = new Float64Array(n);
  const chosen = new Int32Array(n);
  let e = 0;
  for (let i = 0; i < p; i++) {
    start[i] = e;
    const replicas = pools.replicas[i] as number;
    if (replicas === 0 || n === 0) continue;
    const level = Math.floor(replicas / n);
    const extra = replicas - level * n;
    if (extra > 0) topNodes(pools.hash[i] as number, nodes.salt, extra, heap, keys, chosen);
    if (level > 0) {
      for (let j = 0; j < n; j++) {
        node[e + j] = j;
        count[e + j] = level;
      }
      for (let j = 0; j < extra; j++) count[e + (chosen[j] as number)] = level + 1;
      e += n;
    } else {
      const winners = chosen.subarray(0, extra);
      winners.sort();
      node.set(winners, e);
      count.fill(1, e, e + extra);
      e += extra;
    }
  }
  start[p] = e;
  return { start, node, count };
}

/** The entry of pool p on node n, or -1. */
export function findEntry(ideal: Ideal, p: number, n: number): number {
  let lo = ideal.start[p] as number;
  let hi = (ideal.start[p + 1] as number) - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const at = ideal.node[mid] as number;
    if (at === n) return mid;
    if (at < n) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
