// The warm-pool driver, composed: the informers it reads (pools, templates,
// inventories; the Nodes and agent pods that vouch for agents' addresses; the
// SandboxWarmPool CRD whose schema decides which status fields are written),
// the reconciler over them and the watch wiring that pokes it. Every replica
// keeps the caches; only the leader drives (WarmPoolReconciler.lead).
import {
  CustomResourceDefinitionType,
  KubeNodeType,
  KubePodType,
  NodeInventoryType,
  SANDBOX_WARM_POOL_CRD,
  SandboxTemplateType,
  SandboxWarmPoolType,
  type CustomResourceDefinition,
  type KubeNode,
  type KubeObject,
  type KubePod,
  type NodeInventory,
  type SandboxTemplate,
  type SandboxWarmPool,
} from '@warmpool/api';
import { createInformer, type Informer, type KubeLogger, type KubeConfig } from '@warmpool/kube';
import type { Logger, Clock } from '@warmpool/runtime';
import type { PoolSetter } from '../../agents/pool-setter.js';
import type { GenerationSource } from '../../generation/generation.js';
import type { WarmPoolMetrics } from './metrics.js';
import type { TokenSource } from '../../agents/token.js';
import type { EventRecorder } from './events.js';
import { addressCheckOf, slimNode, slimPod, type AddressCheck } from '../../nodes/addresses.js';
import type { WarmPoolDriverSettings } from './options.js';
import { WarmPoolReconciler, type Leadership } from './reconciler.js';
import { describeFields, statusFieldsOf, type StatusFields } from './status-schema.js';
import { KubePoolStatusWriter, type PoolStatusWriter } from './status-writer.js';
import { followStatusSchema, watchAddressVouchers, watchForChanges } from './watch.js';

export interface WarmPoolDriverOptions {
  kubeConfig: KubeConfig;
  /** Where the agent pods run. */
  namespace: string;
  /** The node agents' pods (label selector, in `namespace`); without it only Nodes vouch for addresses. */
  agentPodSelector?: string | undefined;
  setter: PoolSetter;
  /** Default: status server-side applied to the apiserver, fitted to the installed CRD's schema. */
  statusWriter?: PoolStatusWriter | undefined;
  events: EventRecorder;
  generations: GenerationSource;
  token: TokenSource;
  metrics: WarmPoolMetrics;
  leadership: Leadership;
  settings?: Partial<WarmPoolDriverSettings> | undefined;
  logger: Logger;
  kubeLogger: KubeLogger;
  clock: Clock;
}

export interface WarmPoolDriver {
  readonly reconciler: WarmPoolReconciler;
  readonly pools: Informer<SandboxWarmPool>;
  readonly templates: Informer<SandboxTemplate>;
  readonly inventories: Informer<NodeInventory>;
  /** The Nodes, agent pods and the pool CRD: what only the driver reads. */
  readonly driverOnly: ReadonlyArray<Informer<KubeObject>>;
  /**
   * Which addresses each node vouches for, as of now: an agent is called (with the fleet token) only at one of them.
   */
  readonly addresses: () => AddressCheck;
}

export function createWarmPoolDriver(options: WarmPoolDriverOptions): WarmPoolDriver {
  const { kubeConfig, kubeLogger, logger } = options;
  const pools = createInformer<SandboxWarmPool>(kubeConfig, SandboxWarmPoolType, { logger: kubeLogger });
  const templates = createInformer<SandboxTemplate>(kubeConfig, SandboxTemplateType, { logger: kubeLogger });
  const inventories = createInformer<NodeInventory>(kubeConfig, NodeInventoryType, { logger: kubeLogger });
  // Nodes and pods are big and there is one per node: listed in pages, cached cut down to what the check reads.
  const nodes = createInformer<KubeNode>(kubeConfig, KubeNodeType, {
    logger: kubeLogger,
    transform: slimNode,
    pageSize: 500,
  });
  const agentPods = options.agentPodSelector
    ? createInformer<KubePod>(kubeConfig, KubePodType, {
        logger: kubeLogger,
        namespace: options.namespace,
        labelSelector: options.agentPodSelector,
        transform: slimPod,
        pageSize: 500,
      })
    : undefined;
  // The one CRD whose schema decides which status fields can be written (ours or upstream's).
  const poolCrd = createInformer<CustomResourceDefinition>(kubeConfig, CustomResourceDefinitionType, {
    logger: kubeLogger,
    fieldSelector: `metadata.name=${SANDBOX_WARM_POOL_CRD}`,
  });
  let poolStatusFields: StatusFields = 'any';

  // Where an agent may be called with the fleet token: at an address its own Node vouches for (node-addresses.ts).
  const addresses = (): AddressCheck =>
    addressCheckOf({
      node: (name) => nodes.lister.get(name),
      ...(agentPods ? { agentPods: () => agentPods.lister.list() } : {}),
    });
  const reconciler = new WarmPoolReconciler({
    pools: pools.lister,
    templates: templates.lister,
    inventories: inventories.lister,
    addresses,
    setter: options.setter,
    statusWriter: options.statusWriter ?? new KubePoolStatusWriter(kubeConfig, { fields: () => poolStatusFields }),
    events: options.events,
    generations: options.generations,
    token: options.token,
    metrics: options.metrics,
    logger: logger.child({ controller: 'warmpool' }),
    clock: options.clock,
    leadership: options.leadership,
    ...options.settings,
  });
  watchForChanges(reconciler, pools, templates, inventories);
  watchAddressVouchers(reconciler, nodes, agentPods);
  followStatusSchema(poolCrd, (crd) => {
    const fields = statusFieldsOf(crd);
    if (describeFields(fields) === describeFields(poolStatusFields)) return;
    poolStatusFields = fields;
    const conditions = fields === 'any' || fields.has('conditions');
    options.metrics.statusConditionsWritten(conditions);
    logger[conditions ? 'info' : 'warn'](
      conditions
        ? 'SandboxWarmPool status schema read: writing every status field'
        : "the installed SandboxWarmPool CRD declares no status.conditions (upstream's schema): writing only the fields it declares",
      {
        crd: SANDBOX_WARM_POOL_CRD,
        fields: describeFields(fields),
      },
    );
    reconciler.pokeResync('status schema changed');
  });
  const driverOnly = [nodes, poolCrd, ...(agentPods ? [agentPods] : [])] as Array<Informer<KubeObject>>;
  return { reconciler, pools, templates, inventories, driverOnly, addresses };
}
