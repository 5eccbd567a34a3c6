// What etcd itself holds, asked of it directly (its v3 JSON gateway), not
// through the apiserver: how a spec or a benchmark shows what is, and is not,
// stored as an object.
import type { TestCluster } from './cluster.js';

/** How many keys etcd holds under `prefix` (e.g. `/registry/warmpool.dev/`). */
export async function etcdKeyCount(cluster: Pick<TestCluster, 'etcdUrl'>, prefix: string): Promise<number> {
  const key = Buffer.from(prefix);
  const end = Buffer.from(prefix);
  // The range [prefix, prefix with its last byte + 1): every key that starts with the prefix.
  end[end.length - 1] = (end[end.length - 1] ?? 0) + 1;
  const res = await fetch(`${cluster.etcdUrl}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key: key.toString('base64'), range_end: end.toString('base64'), count_only: true }),
  });
  if (!res.ok) throw new Error(`etcd range ${prefix}: HTTP ${res.status}`);
  const body = (await res.json()) as { count?: string };
  return Number(body.count ?? '0');
}
