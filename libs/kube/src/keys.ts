import type { KubeObject } from '@warmpool/api';

/** The cache key client-go uses: `namespace/name`, or `name` for cluster-scoped objects. */
export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

export function keyOf(obj: KubeObject): string {
  const name = obj.metadata?.name;
  if (!name) throw new Error('object has no metadata.name');
  return objectKey(obj.metadata?.namespace, name);
}
