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
    const plan = planOf(pool, templateOf(pool, template));
    if (plan !== undefined) plans.push(plan);
  }
  return plans.sort(byRef);
}

/**
 * planPools, remembered: a pool whose object and template object are the ones the last run saw (an informer replaces
 * the object on every change) keeps its plan, the same object, so what is keyed by plans downstream holds too.
 */
export class PoolPlans {
  #last = new Map<SandboxWarmPool, { template: SandboxTemplate | undefined; plan: PoolPlan | undefined }>();

  plans(pools: readonly SandboxWarmPool[], template: TemplateLookup): PoolPlan[] {
    const next = new Map<SandboxWarmPool, { template: SandboxTemplate | undefined; plan: PoolPlan | undefined }>();
    const plans: PoolPlan[] = [];
    for (const pool of pools) {
      const found = templateOf(pool, template);
      const before = this.#last.get(pool);
      const entry =
        before !== undefined && before.template === found ? before : { template: found, plan: planOf(pool, found) };
      next.set(pool, entry);
      if (entry.plan !== undefined) plans.push(entry.plan);
    }
    this.#last = next;
    return plans.sort(byRef);
  }
}

function templateOf(pool: SandboxWarmPool, template: TemplateLookup): SandboxTemplate | undefined {
  const templateName = pool.spec?.sandboxTemplateRef?.name ?? '';
  return templateName === '' ? undefined : template(pool.metadata?.namespace ?? '', templateName);
}

function byRef(a: PoolPlan, b: PoolPlan): number {
  return a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0;
}

/** A pool's plan given its template as looked up (undefined: not found); undefined when warmpool does not act on it. */
function planOf(pool: SandboxWarmPool, found: SandboxTemplate | undefined): PoolPlan | undefined {
  const namespace = pool.metadata?.namespace ?? '';
  const name = pool.metadata?.name ?? '';
  if (name === '' || pool.metadata?.deletionTimestamp !== undefined) return undefined;
  const ref = `${namespace}/${name}`;
  if (found === undefined) {
    const templateName = pool.spec?.sandboxTemplateRef?.name ?? '';
    return { kind: 'template-missing', pool, ref, template: `${namespace}/${templateName}` };
  }
  if (!isDriven(found)) return undefined;
  try {
    const key = poolKeyOf(found);
    // A bad setting is refused like a bad key: reported on this pool, never pushed (sandboxd would refuse the node's
    // whole PUT for it).
    const options = poolOptionsOf(pool.metadata?.annotations, found.metadata?.annotations);
    if (!options.ok)
      return { kind: 'invalid-template', pool, ref, message: `SandboxWarmPool ${ref}: ${options.problems.join('; ')}` };
    return {
      kind: 'driven',
      pool,
      ref,
      key,
      keyId: poolKeyId(key),
      replicas: replicasOf(pool),
      options: options.options,
    };
  } catch (err) {
    if (!(err instanceof TemplateKeyError)) throw err;
    return { kind: 'invalid-template', pool, ref, message: err.message };
  }
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
