/** An exact member pool in another cluster, the target a create can be pinned to. */
export interface PinnedTarget {
  clusterId: string;
  memberPool: string;
}

const SEPARATOR = '::';

/** `"<cluster>::<pool>"`. Throws when the pair could not be parsed back unchanged. */
export function formatPinnedTarget(target: PinnedTarget): string {
  if (target.clusterId === '' || target.memberPool === '') {
    throw new RangeError('pinned target needs a non-empty cluster id and member pool');
  }
  // Pool names are Kubernetes names (no ':'), which is what lets a cluster id
  // itself contain ':' and still round-trip: parsing splits at the last '::'.
  if (target.memberPool.includes(':')) {
    throw new RangeError(`member pool ${JSON.stringify(target.memberPool)} must not contain ':'`);
  }
  return `${target.clusterId}${SEPARATOR}${target.memberPool}`;
}

/** Parses `"<cluster>::<pool>"`; undefined when the text is not one. */
export function parsePinnedTarget(text: string): PinnedTarget | undefined {
  const at = text.lastIndexOf(SEPARATOR);
  if (at < 0) return undefined;
  const clusterId = text.slice(0, at);
  const memberPool = text.slice(at + SEPARATOR.length);
  if (clusterId === '' || memberPool === '' || memberPool.includes(':')) return undefined;
  return { clusterId, memberPool };
}
