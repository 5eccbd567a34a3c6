// The SandboxEnv controller, composed: the informer over SandboxEnvs, the
// reconciler (every replica runs it: each Env's local capacity feeds its claim
// router and the federation records), its status writes and the autoscaler
// (the leader only, SandboxEnvReconciler.lead), and the watch wiring.
import {
  SandboxEnvType,
  type KubeObject,
  type NodeInventory,
  type SandboxEnv,
  type SandboxTemplate,
  type SandboxWarmPool,
} from '@warmpool/api';
import { createInformer, type Informer, type KubeLogger, type KubeConfig } from '@warmpool/kube';
import type { Logger, Clock } from '@warmpool/runtime';
import type { Federation } from '../../federation/federation.js';
import { cachesSynced, type Runnable } from '../../manager/runnable.js';
import { EnvAutoscaler, KubeScaleTarget, type ScaleTarget } from './autoscaler.js';
import { SandboxEnvReconciler } from './reconciler.js';
import { KubeEnvStatusWriter, type EnvStatusWriter } from './status-writer.js';
import { watchSandboxEnvs } from './watch.js';

export interface SandboxEnvsOptions {
  kubeConfig: KubeConfig;
  pools: Informer<SandboxWarmPool>;
  templates: Informer<SandboxTemplate>;
  inventories: Informer<NodeInventory>;
  /** Where each run's local capacity goes, and (multi-cluster) where the other clusters' members come from. */
  federation: Pick<Federation, 'setLocal' | 'foreignMembers'>;
  multiCluster: boolean;
  /** Default: a merge patch of the SandboxEnv status subresource. */
  writer?: EnvStatusWriter | undefined;
  /** Default: the SandboxWarmPool scale subresource. */
  scaleTarget?: ScaleTarget | undefined;
  scaleDownDelayMs?: number | undefined;
  staleAfterMs: number;
  intervalMs: number;
  logger: Logger;
  kubeLogger: KubeLogger;
  clock: Clock;
}

export interface SandboxEnvs {
  readonly informer: Informer<SandboxEnv>;
  readonly reconciler: SandboxEnvReconciler;
  readonly autoscaler: EnvAutoscaler;
}

export function createSandboxEnvs(options: SandboxEnvsOptions): SandboxEnvs {
  const { pools, federation, logger, clock } = options;
  const informer = createInformer<SandboxEnv>(options.kubeConfig, SandboxEnvType, { logger: options.kubeLogger });
  const autoscaler = new EnvAutoscaler({
    target: options.scaleTarget ?? new KubeScaleTarget(options.kubeConfig),
    clock,
    ...(options.scaleDownDelayMs !== undefined ? { scaleDownDelayMs: options.scaleDownDelayMs } : {}),
    logger: logger.child({ controller: 'env-autoscaler' }),
  });
  const reconciler = new SandboxEnvReconciler({
    envs: informer.lister,
    pools: pools.lister,
    templates: options.templates.lister,
    inventories: options.inventories.lister,
    writer: options.writer ?? new KubeEnvStatusWriter(options.kubeConfig),
    ...(options.multiCluster
      ? { foreignMembers: (ns: string, env: string) => federation.foreignMembers(ns, env) }
      : {}),
    onCapacity: (records) => federation.setLocal(records),
    onLeaderRun: (runs, counts, signal) =>
      autoscaler.run(runs, counts, (ns, name) => pools.lister.get(ns, name), signal),
    clock,
    staleAfterMs: options.staleAfterMs,
    intervalMs: options.intervalMs,
    logger: logger.child({ controller: 'sandboxenvs' }),
  });
  watchSandboxEnvs(reconciler, informer, pools, options.templates, options.inventories);
  return { informer, reconciler, autoscaler };
}

/**
 * The SandboxEnv controller as the manager runs it: the capacity runs in every replica (each Env's local capacity
 * feeds the claim router), the status writes and the autoscaler on the leader only; both once the SandboxEnv cache
 * and the ones it `reads` (pools, templates, inventories) have synced.
 */
export function sandboxEnvRunnables(envs: SandboxEnvs, reads: ReadonlyArray<Informer<KubeObject>>): Runnable[] {
  const { reconciler } = envs;
  const caches = [envs.informer, ...reads] as Array<Informer<KubeObject>>;
  return [
    {
      name: 'SandboxEnv capacity',
      needsLeader: false,
      // The runs read the caches: the first waits for them, later ones see them filled.
      start: () => void cachesSynced(caches).then((synced) => synced && reconciler.start()),
      close: () => reconciler.close(),
    },
    {
      name: 'SandboxEnv status and autoscaler',
      needsLeader: true,
      async start(signal) {
        if (await cachesSynced(caches, signal)) reconciler.lead(signal);
      },
      close: async () => reconciler.stopLeading(),
    },
  ];
}
