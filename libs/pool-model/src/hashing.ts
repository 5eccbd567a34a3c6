// Rendezvous (highest-random-weight) hashing on 32-bit integers. Each pool
// ranks the nodes by affinity(pool, node); the ranking of two nodes never
// depends on which other nodes exist, which is what keeps a spread stable
// when nodes join or leave.

/** murmur3's 32-bit finalizer: a bijection with full avalanche. */
export function mix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** FNV-1a over UTF-16 code units, then mixed: a well-spread 32-bit hash of a name. */
export function hashName(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return mix32(h);
}

/** Pre-mixes a node's hash so that affinity() is one mix per (pool, node). */
export function nodeSalt(nodeHash: number): number {
  return Math.imul(nodeHash, 0x9e3779b1) >>> 0;
}

/**
 * How much a pool wants a node, 0 … 2^32-1. For one pool, distinct node salts
 * give distinct affinities (mix32 and xor are bijections).
 */
export function affinity(poolHash: number, salt: number): number {
  return mix32(poolHash ^ salt);
}

/**
 * Indices are packed under the 32-bit affinity into one exact double, so one numeric comparison ranks and breaks ties.
 */
export const INDEX_BITS = 20;
export const MAX_INDEX = 2 ** INDEX_BITS - 1;
const INDEX_SCALE = 2 ** INDEX_BITS;

/** A total order key: higher affinity first, then the lower index (names are sorted, so ties break by name). */
export function rankKey(score: number, index: number): number {
  return score * INDEX_SCALE + (MAX_INDEX - index);
}

export function indexOfRankKey(key: number): number {
  return MAX_INDEX - (key % INDEX_SCALE);
}
