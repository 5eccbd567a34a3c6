// What the driver makes of the pools it sees: which it drives (their template
// opts in and names a valid pool key), which it reports a problem on, and the
// demand per sandboxd pool key. Pure; reads nothing but its arguments.
import {
  poolKeyId,
  poolOptionsOf,
  type PoolKey,
  type PoolOptions,
  type SandboxTemplate,
  type SandboxWarmPool,
} from '@warmpool/api';
import { isDriven, poolKeyOf, replicasOf, TemplateKeyError } from '@warmpool/pool-model';

interface PlanBase {
  pool: SandboxWarmPool;
  /** `namespace/name`. */
  ref: string;
}

export type PoolPlan =
  | (PlanBase & {
      kind: 'driven';
      key: PoolKey;
      keyId: string;
      replicas: number;
      /** sandboxd's per-pool settings from the pool's annotations, else its template's (libs/api pool-options). */
      options: PoolOptions;
    })
  /**
   * The referenced SandboxTemplate does not exist: whose pool this is cannot be told, so only a condition is written.
   */
  | (PlanBase & { kind: 'template-missing'; template: string })
  /** The template opts in but names no valid pool key (no image, a bad annotation). */
  | (PlanBase & { kind: 'invalid-template'; message: string });

export type TemplateLookup = (namespace: string, name: string) => SandboxTemplate | undefined;

/**
 * One plan per pool warmpool acts on, sorted by ref. Pools whose template does
 * not opt in are left out (upstream's controller may own them), and so are
 * pools being deleted: their demand is gone, which drains them.
 */
export function planPools(pools: readonly SandboxWarmPool[], template: TemplateLookup): PoolPlan[] {
  const plans: PoolPlan[] = [];
  for (const pool of pools) {
    const namespace = pool.metadata?.namespace ?? '';
    const name = pool.metadata?.name ?? '';
    if (name === '' || pool.metadata?.deletionTimestamp !== undefined) continue;
    const ref = `${namespace}/${name}`;
    const templateName = pool.spec?.sandboxTemplateRef?.name ?? '';
    const found = templateName === '' ? undefined : template(namespace, templateName);
    if (found === undefined) {
      plans.push({ kind: 'template-missing', pool, ref, template: `${namespace}/${templateName}` });
      continue;
    }
    if (!isDriven(found)) continue;
    try {
      const key = poolKeyOf(found);
      // A bad setting is refused like a bad key: reported on this pool, never pushed (sandboxd would refuse the node's
      // whole PUT for it).
      const options = poolOptionsOf(pool.metadata?.annotations, found.metadata?.annotations);
      if (!options.ok) {
        plans.push({
          kind: 'invalid-template',
          pool,
          ref,
          message: `SandboxWarmPool ${ref}: ${options.problems.join('; ')}`,
        });
        continue;
      }
      plans.push({
        kind: 'driven',
        pool,
        ref,
        key,
        keyId: poolKeyId(key),
        replicas: replicasOf(pool),
        options: options.options,
      });
    } catch (err) {
      if (!(err instanceof TemplateKeyError)) throw err;
      plans.push({ kind: 'invalid-template', pool, ref, message: err.message });
    }
  }
  return plans.sort((a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0));
}

export interface KeyDemand {
  key: PoolKey;
  /** Σ replicas of the driven pools with this key: pools sharing a key share the node-level pool. */
  replicas: number;
  /** The node-level pool's settings: those of the first pool (by namespace/name) sharing the key. */
  options: PoolOptions;
}

export function demandsOf(plans: readonly PoolPlan[]): Map<string, KeyDemand> {
  const demands = new Map<string, KeyDemand>();
  for (const plan of plans) {
    if (plan.kind !== 'driven') continue;
    const demand = demands.get(plan.keyId);
    if (demand === undefined)
      demands.set(plan.keyId, { key: plan.key, replicas: plan.replicas, options: plan.options });
    else demand.replicas += plan.replicas;
  }
  return demands;
}
