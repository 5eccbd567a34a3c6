// kubectl helpers for the specs: apply objects as a user would, read pools and envs back.
import { SandboxEnvType, SandboxWarmPoolType, type SandboxEnv, type SandboxWarmPool } from '@warmpool/api';
import type { TestCluster } from '@warmpool/harness';
import { ResourceClient } from '@warmpool/kube';
import { DEFAULT_LEASE_NAME } from '../../src/config/settings.js';

export async function kubectl(cluster: TestCluster, args: string[], input?: string): Promise<string> {
  const result = await cluster.kubectl(args, input === undefined ? {} : { input });
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed:\n${result.stderr}${result.stdout}`);
  return result.stdout;
}

export async function apply(cluster: TestCluster, ...objects: object[]): Promise<void> {
  await kubectl(cluster, ['apply', '-f', '-'], objects.map((o) => JSON.stringify(o)).join('\n---\n'));
}

export async function patch(
  cluster: TestCluster,
  kind: string,
  namespace: string,
  name: string,
  body: Record<string, unknown>,
): Promise<void> {
  await kubectl(cluster, ['patch', kind, name, '-n', namespace, '--type=merge', '-p', JSON.stringify(body)]);
}

/** Who holds the control plane's Lease in `namespace` ('' when nobody does); undefined when there is no Lease. */
export async function leaseHolder(cluster: TestCluster, namespace: string): Promise<string | undefined> {
  const out = await cluster.kubectl([
    'get',
    'lease',
    DEFAULT_LEASE_NAME,
    '-n',
    namespace,
    '-o',
    'jsonpath={.spec.holderIdentity}',
  ]);
  return out.code === 0 ? out.stdout.trim() : undefined;
}

export async function getPool(cluster: TestCluster, namespace: string, name: string): Promise<SandboxWarmPool> {
  return new ResourceClient<SandboxWarmPool>(cluster.kubeConfig, SandboxWarmPoolType).get({ namespace, name });
}

export function condition(
  pool: SandboxWarmPool,
  type: string,
): { status: string; reason?: string; message?: string; observedGeneration?: number } | undefined {
  return pool.status?.conditions?.find((c) => c.type === type);
}

export async function getEnv(cluster: TestCluster, namespace: string, name: string): Promise<SandboxEnv> {
  return new ResourceClient<SandboxEnv>(cluster.kubeConfig, SandboxEnvType).get({ namespace, name });
}
