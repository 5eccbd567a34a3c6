// Core kinds the tests use alongside warmpool's CRDs: ConfigMaps (namespaced,
// core group) and Namespaces (cluster-scoped, core group).
import type { KubeObject, ObjectMeta, ResourceType } from '@warmpool/api';

export const ConfigMapType: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'configmaps',
  kind: 'ConfigMap',
  namespaced: true,
};
export const NamespaceType: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'namespaces',
  kind: 'Namespace',
  namespaced: false,
};

export interface ConfigMap extends KubeObject {
  metadata: ObjectMeta;
  data?: Record<string, string>;
}

export interface Namespace extends KubeObject {
  metadata: ObjectMeta;
}

export function configMap(namespace: string, name: string, data: Record<string, string> = {}): ConfigMap {
  return { metadata: { namespace, name }, data };
}

/** Records what an informer's handlers were told, as short strings. */
export class EventLog {
  readonly events: string[] = [];
  readonly handlers = {
    onAdd: (obj: KubeObject, initialList: boolean): void => {
      this.events.push(`add ${obj.metadata?.name}${initialList ? ' (list)' : ''}`);
    },
    onUpdate: (oldObj: KubeObject, newObj: KubeObject): void => {
      this.events.push(oldObj === newObj ? `resync ${newObj.metadata?.name}` : `update ${newObj.metadata?.name}`);
    },
    onDelete: (obj: KubeObject): void => {
      this.events.push(`delete ${obj.metadata?.name}`);
    },
  };

  has(event: string): boolean {
    return this.events.includes(event);
  }

  clear(): void {
    this.events.length = 0;
  }
}
