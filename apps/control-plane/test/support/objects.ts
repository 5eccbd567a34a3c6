// The objects the specs apply, as a user would write them, and kubectl helpers.
import { DRIVER_ANNOTATION, DRIVER_SANDBOXD, SandboxEnvType, SandboxWarmPoolType, type SandboxEnv, type SandboxWarmPool } from '@warmpool/api';
import type { TestCluster } from '@warmpool/harness';
import { ResourceClient } from '@warmpool/kube';

export function template(namespace: string, name: string, image: string, options: { optIn?: boolean; annotations?: Record<string, string> } = {}): Record<string, unknown> {
  const annotations = { ...(options.optIn === false ? {} : { [DRIVER_ANNOTATION]: DRIVER_SANDBOXD }), ...options.annotations };
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxTemplate',
    metadata: { namespace, name, annotations },
    spec: { podTemplate: { spec: { containers: image === '' ? [{ name: 'main' }] : [{ name: 'main', image }] } } },
  };
}

export function warmPool(namespace: string, name: string, templateName: string, replicas: number): Record<string, unknown> {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxWarmPool',
    metadata: { namespace, name },
    spec: { replicas, sandboxTemplateRef: { name: templateName } },
  };
}

export async function kubectl(cluster: TestCluster, args: string[], input?: string): Promise<string> {
  const result = await cluster.kubectl(args, input === undefined ? {} : { input });
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed:\n${result.stderr}${result.stdout}`);
  return result.stdout;
}

export async function apply(cluster: TestCluster, ...objects: Array<Record<string, unknown>>): Promise<void> {
  await kubectl(cluster, ['apply', '-f', '-'], objects.map((o) => JSON.stringify(o)).join('\n---\n'));
}

export async function patch(cluster: TestCluster, kind: string, namespace: string, name: string, body: Record<string, unknown>): Promise<void> {
  await kubectl(cluster, ['patch', kind, name, '-n', namespace, '--type=merge', '-p', JSON.stringify(body)]);
}

export async function getPool(cluster: TestCluster, namespace: string, name: string): Promise<SandboxWarmPool> {
  return new ResourceClient<SandboxWarmPool>(cluster.kubeConfig, SandboxWarmPoolType).get({ namespace, name });
}

export function condition(pool: SandboxWarmPool, type: string): { status: string; reason?: string; message?: string; observedGeneration?: number } | undefined {
  return pool.status?.conditions?.find((c) => c.type === type);
}

/** A SandboxEnv of `members` (pool → scaling group), with optional autoscaling per group. */
export function sandboxEnv(namespace: string, name: string, members: Record<string, string>, autoscaling: Array<Record<string, unknown>> = []): Record<string, unknown> {
  return {
    apiVersion: 'warmpool.dev/v1alpha1',
    kind: 'SandboxEnv',
    metadata: { namespace, name },
    spec: { members: Object.entries(members).map(([pool, scalingGroup]) => ({ pool, scalingGroup })), ...(autoscaling.length > 0 ? { autoscaling } : {}) },
  };
}

export async function getEnv(cluster: TestCluster, namespace: string, name: string): Promise<SandboxEnv> {
  return new ResourceClient<SandboxEnv>(cluster.kubeConfig, SandboxEnvType).get({ namespace, name });
}
