// What pokes the pool autoscaler between its ticks: an autoscaler added or its
// spec changed (a new scaler starts at once). Deletions and pool changes wait
// for the next tick, which reads the caches whole.
import type { SandboxWarmPoolAutoscaler } from '@warmpool/api';
import type { Informer } from '@warmpool/kube';
import type { PoolAutoscalerController } from './controller.js';

export function watchPoolAutoscalers(
  controller: PoolAutoscalerController,
  autoscalers: Informer<SandboxWarmPoolAutoscaler>,
): void {
  autoscalers.addEventHandler({
    onAdd: () => controller.poke(),
    onUpdate: (old, next) => {
      if (old !== next && old.metadata?.generation !== next.metadata?.generation) controller.poke();
    },
  });
}
