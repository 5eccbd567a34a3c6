// An object deleted and created again under its name: what a cache may still
// hold of the first, and the namesake the apiserver has now. What every
// status writer's spec writes a stale status against.
import type { KubeObject } from '@warmpool/api';
import type { ResourceClient } from '@warmpool/kube';

export async function reborn<T extends KubeObject>(
  client: ResourceClient<T>,
  object: T,
): Promise<{ old: T; namesake: T }> {
  const old = await client.create(object);
  const namespace = old.metadata?.namespace;
  await client.delete({ name: old.metadata?.name ?? '', ...(namespace === undefined ? {} : { namespace }) });
  return { old, namesake: await client.create(object) };
}
