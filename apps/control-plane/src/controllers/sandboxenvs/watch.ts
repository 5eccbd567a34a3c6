// What pokes the SandboxEnv reconcile: an Env added, changed (its spec, not
// its own status write) or deleted; a pool added, deleted or scaled; a
// template changed; any inventory republish (the counts move with it). The
// run reads the whole world from the caches, so only the reason is passed.
import type { NodeInventory, SandboxEnv, SandboxTemplate, SandboxWarmPool } from '@warmpool/api';
import type { Informer } from '@warmpool/kube';
import type { SandboxEnvReconciler } from './reconciler.js';

export function watchSandboxEnvs(
  reconciler: SandboxEnvReconciler,
  envs: Informer<SandboxEnv>,
  pools: Informer<SandboxWarmPool>,
  templates: Informer<SandboxTemplate>,
  inventories: Informer<NodeInventory>,
): void {
  envs.addEventHandler({
    onAdd: () => reconciler.poke('env added'),
    onUpdate: (old, next) => {
      if (old !== next && old.metadata?.generation !== next.metadata?.generation) reconciler.poke('env changed');
    },
    onDelete: () => reconciler.poke('env deleted'),
  });
  pools.addEventHandler({
    onAdd: () => reconciler.poke('pool added'),
    onUpdate: (old, next) => {
      if (old !== next && old.metadata?.generation !== next.metadata?.generation) reconciler.poke('pool changed');
    },
    onDelete: () => reconciler.poke('pool deleted'),
  });
  templates.addEventHandler({
    onAdd: () => reconciler.poke('template added'),
    onUpdate: (old, next) => {
      if (old !== next) reconciler.poke('template changed');
    },
    onDelete: () => reconciler.poke('template deleted'),
  });
  inventories.addEventHandler({
    onAdd: () => reconciler.poke('node added'),
    onUpdate: (old, next) => {
      if (old !== next) reconciler.poke('node republished');
    },
    onDelete: () => reconciler.poke('node deleted'),
  });
}
