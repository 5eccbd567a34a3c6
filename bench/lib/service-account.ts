// ServiceAccount tokens for a benchmark's clients: how a deployed component
// authenticates (the apiserver caches a token's review for 10 s), where the
// admin client certificate would have its chain verified on every request.
import type { TestCluster } from '@warmpool/harness';

/** A token of the ServiceAccount `namespace/name` (created with the cluster), valid for 2 h. */
export async function serviceAccountToken(cluster: TestCluster, namespace: string, name: string): Promise<string> {
  return (await cluster.kubectl(['create', 'token', name, '-n', namespace, '--duration=2h'])).stdout.trim();
}

/** Creates the ServiceAccount `namespace/name`, binds it to cluster-admin, and returns a token of it. */
export async function clusterAdminServiceAccount(
  cluster: TestCluster,
  namespace: string,
  name: string,
): Promise<string> {
  await cluster.kubectl(['create', 'serviceaccount', name, '-n', namespace]);
  await cluster.kubectl([
    'create',
    'clusterrolebinding',
    `bench-${name}`,
    '--clusterrole=cluster-admin',
    `--serviceaccount=${namespace}:${name}`,
  ]);
  return serviceAccountToken(cluster, namespace, name);
}
