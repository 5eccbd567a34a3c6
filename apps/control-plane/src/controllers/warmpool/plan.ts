// What the driver makes of the pools it sees: which it drives (their template
// opts in and names a valid pool key), which it reports a problem on, and the
// demand per sandboxd pool key. Pure; reads nothing but its arguments.
import { poolKeyId, type PoolKey, type SandboxTemplate, type SandboxWarmPool } from '@warmpool/api';
import { isDriven, poolKeyOf, replicasOf, TemplateKeyError } from '@warmpool/pool-model';

interface PlanBase {
  pool: SandboxWarmPool;
  /** `namespace/name`. */
  ref: string;
}

export type PoolPlan =
  | (PlanBase & { kind: 'driven'; key: PoolKey; keyId: string; replicas: number })
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
      plans.push({ kind: 'driven', pool, ref, key, keyId: poolKeyId(key), replicas: replicasOf(pool) });
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
}

export function demandsOf(plans: readonly PoolPlan[]): Map<string, KeyDemand> {
  const demands = new Map<string, KeyDemand>();
  for (const plan of plans) {
    if (plan.kind !== 'driven') continue;
    const demand = demands.get(plan.keyId);
    if (demand === undefined) demands.set(plan.keyId, { key: plan.key, replicas: plan.replicas });
    else demand.replicas += plan.replicas;
  }
  return demands;
}
