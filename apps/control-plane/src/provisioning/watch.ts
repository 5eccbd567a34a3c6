// Which informer events change the set of Provisioners: a pool added, deleted
// or re-pointed at another template, and a template's opt-in or key changing
// (annotations and the image, so any update of it). Each re-syncs the whole
// set, O(pools), coalesced to once per tick of events.
import type { SandboxTemplate, SandboxWarmPool } from '@warmpool/api';
import type { Informer } from '@warmpool/kube';
import type { ProvisionerRegistry } from './provisioners.js';

export function watchProvisioners(
  provisioners: ProvisionerRegistry,
  pools: Informer<SandboxWarmPool>,
  templates: Informer<SandboxTemplate>,
): void {
  let queued = false;
  const sync = (): void => {
    if (queued) return;
    queued = true;
    queueMicrotask(() => {
      queued = false;
      provisioners.sync();
    });
  };
  pools.addEventHandler({
    onAdd: sync,
    onUpdate: (old, next) => {
      if (
        old.spec?.sandboxTemplateRef?.name !== next.spec?.sandboxTemplateRef?.name ||
        old.metadata?.deletionTimestamp !== next.metadata?.deletionTimestamp
      )
        sync();
    },
    onDelete: sync,
  });
  templates.addEventHandler({
    onAdd: sync,
    onUpdate: (old, next) => {
      if (old !== next) sync();
    },
    onDelete: sync,
  });
}
