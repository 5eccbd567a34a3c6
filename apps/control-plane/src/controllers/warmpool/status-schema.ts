// What the installed SandboxWarmPool CRD lets us write into status. Ours
// declares replicas, readyReplicas, selector, observedGeneration and
// conditions; upstream agent-sandbox's (which a cluster may run instead,
// crds.upstream.install=false) declares no conditions, and server-side apply refuses a
// whole write that carries an undeclared field (".status.conditions: field not
// declared in schema"), which froze `kubectl get swp` at its old READY. So each
// top-level status field is written only where the served version declares it,
// re-read whenever the CRD changes.
import { SandboxWarmPoolType, type CustomResourceDefinition, type SandboxWarmPoolStatus } from '@warmpool/api';

/**
 * The status fields the schema declares, or 'any' when it keeps unknown fields (or cannot be read: the write then says
 * why).
 */
export type StatusFields = ReadonlySet<string> | 'any';

export function statusFieldsOf(
  crd: CustomResourceDefinition | undefined,
  version: string = SandboxWarmPoolType.version,
): StatusFields {
  const served = crd?.spec?.versions?.find((v) => v.name === version);
  const root = served?.schema?.openAPIV3Schema;
  if (root === undefined || root['x-kubernetes-preserve-unknown-fields'] === true) return 'any';
  const status = root.properties?.['status'];
  // A schema that declares no status holds none: the apiserver refuses any status written there, even `{}`.
  if (status === undefined) return new Set();
  if (status['x-kubernetes-preserve-unknown-fields'] === true) return 'any';
  return new Set(Object.keys(status.properties ?? {}));
}

/** `status` cut down to what `fields` declares. */
export function fitStatus(status: SandboxWarmPoolStatus, fields: StatusFields): SandboxWarmPoolStatus {
  if (fields === 'any') return status;
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(status)) if (fields.has(field)) out[field] = value;
  return out as SandboxWarmPoolStatus;
}

/** For logs: the fields, or 'any'. */
export function describeFields(fields: StatusFields): string {
  return fields === 'any' ? 'any' : [...fields].sort().join(', ');
}
