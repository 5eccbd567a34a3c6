// Which informer events wake which SandboxClaims. Every replica keeps the
// caches; the controller ignores wake-ups while it does not lead.
import type { SandboxClaim, SandboxTemplate, SandboxWarmPool } from '@warmpool/api';
import type { Informer } from '@warmpool/kube';
import type { SandboxClaimController } from './controller.js';

/** Whether an update can change what the controller does: our own status writes cannot. */
function claimChangeMatters(old: SandboxClaim, next: SandboxClaim): boolean {
  if (old === next) return true; // a resync: look again
  const a = old.metadata;
  const b = next.metadata;
  return (
    a.generation !== b.generation ||
    a.uid !== b.uid ||
    a.deletionTimestamp !== b.deletionTimestamp ||
    JSON.stringify(a.finalizers ?? []) !== JSON.stringify(b.finalizers ?? []) ||
    JSON.stringify(a.annotations ?? {}) !== JSON.stringify(b.annotations ?? {})
  );
}

export function watchSandboxClaims(
  controller: SandboxClaimController,
  claims: Informer<SandboxClaim>,
  pools: Informer<SandboxWarmPool>,
  templates: Informer<SandboxTemplate>,
): void {
  claims.addEventHandler({
    onAdd: (claim) => controller.enqueue(claim),
    onUpdate: (old, next) => {
      if (claimChangeMatters(old, next)) controller.enqueue(next);
    },
    onDelete: (claim) => controller.enqueue(claim),
  });
  const poolChanged = (pool: SandboxWarmPool): void => {
    const { namespace, name } = pool.metadata;
    if (namespace !== undefined && name !== undefined) controller.enqueuePoolClaims(namespace, new Set([name]));
  };
  pools.addEventHandler({
    onAdd: poolChanged,
    onUpdate: (old, next) => {
      if (old !== next && old.spec?.sandboxTemplateRef?.name !== next.spec?.sandboxTemplateRef?.name) poolChanged(next);
    },
    onDelete: poolChanged,
  });
  const templateChanged = (template: SandboxTemplate): void => {
    const { namespace, name } = template.metadata;
    if (namespace === undefined || name === undefined || !controller.running) return;
    const affected = new Set(
      pools.lister
        .list(namespace)
        .filter((p) => p.spec?.sandboxTemplateRef?.name === name)
        .map((p) => p.metadata.name ?? ''),
    );
    if (affected.size > 0) controller.enqueuePoolClaims(namespace, affected);
  };
  templates.addEventHandler({
    onAdd: templateChanged,
    onUpdate: (old, next) => {
      if (
        old !== next &&
        JSON.stringify(old.metadata.annotations ?? {}) !== JSON.stringify(next.metadata.annotations ?? {})
      )
        templateChanged(next);
    },
    onDelete: templateChanged,
  });
}
