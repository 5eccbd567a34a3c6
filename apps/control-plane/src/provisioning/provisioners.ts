// The registry of Provisioners, one per driven SandboxWarmPool (a registry,
// not a Kubernetes controller): apply() creates or updates one, delete() stops one (claims
// already enqueued are still served), list() answers them in a stable order.
// sync() brings the set in line with the pool and template caches; watch.ts
// calls it when a pool or template changes.
import type { PoolKey, SandboxTemplate, SandboxWarmPool } from '@warmpool/api';
import type { Lister } from '@warmpool/kube';
import { isDriven, poolKeyOf, TemplateKeyError } from '@warmpool/pool-model';
import type { Logger } from '@warmpool/runtime';
import type { BatcherOptions } from '@warmpool/batcher';
import { ClaimFailure } from './claim-service.js';
import { Provisioner, type BatchDispatch } from './provisioner.js';

export interface ProvisionerRegistryOptions {
  pools: Lister<SandboxWarmPool>;
  templates: Lister<SandboxTemplate>;
  dispatch: BatchDispatch;
  batcher?: Partial<BatcherOptions>;
  /** See ProvisionerOptions.rejoinMs. */
  rejoinMs?: number;
  logger: Logger;
}

export class ProvisionerRegistry {
  readonly #options: ProvisionerRegistryOptions;
  readonly #provisioners = new Map<string, Provisioner>();
  readonly #stopping = new Set<Promise<void>>();
  #closed = false;

  constructor(options: ProvisionerRegistryOptions) {
    this.#options = options;
  }

  /** Creates the pool's Provisioner, or points the existing one at the pool's current key. */
  apply(namespace: string, name: string, key: PoolKey): Provisioner {
    const id = `${namespace}/${name}`;
    const existing = this.#provisioners.get(id);
    if (existing !== undefined) {
      existing.key = key;
      return existing;
    }
    const provisioner = new Provisioner({
      namespace,
      name,
      key,
      dispatch: this.#options.dispatch,
      ...(this.#options.batcher !== undefined ? { batcher: this.#options.batcher } : {}),
      ...(this.#options.rejoinMs !== undefined ? { rejoinMs: this.#options.rejoinMs } : {}),
    });
    this.#provisioners.set(id, provisioner);
    this.#options.logger.info('provisioner started', { pool: id, key });
    return provisioner;
  }

  /** Stops the pool's Provisioner: no new claims, the enqueued ones are still served. */
  delete(namespace: string, name: string): void {
    const id = `${namespace}/${name}`;
    const provisioner = this.#provisioners.get(id);
    if (provisioner === undefined) return;
    this.#provisioners.delete(id);
    const stopping = provisioner.stop();
    this.#stopping.add(stopping);
    void stopping.finally(() => this.#stopping.delete(stopping));
    this.#options.logger.info('provisioner stopped', { pool: id });
  }

  /** Every Provisioner, by namespace then name. */
  list(): Provisioner[] {
    return [...this.#provisioners.values()].sort(
      (a, b) => compare(a.namespace, b.namespace) || compare(a.name, b.name),
    );
  }

  get(namespace: string, name: string): Provisioner | undefined {
    return this.#provisioners.get(`${namespace}/${name}`);
  }

  /** Applies every driven pool and deletes the Provisioners of pools that are gone or no longer driven. */
  sync(): void {
    if (this.#closed) return;
    const wanted = new Set<string>();
    for (const pool of this.#options.pools.list()) {
      const namespace = pool.metadata?.namespace;
      const name = pool.metadata?.name;
      if (namespace === undefined || name === undefined || pool.metadata?.deletionTimestamp !== undefined) continue;
      const key = this.#drivenKey(pool);
      if (key === undefined) continue;
      wanted.add(`${namespace}/${name}`);
      this.apply(namespace, name, key);
    }
    for (const provisioner of this.list()) {
      if (!wanted.has(`${provisioner.namespace}/${provisioner.name}`))
        this.delete(provisioner.namespace, provisioner.name);
    }
  }

  /** Why a claim of this pool has no Provisioner: PoolNotFound or NotDriven. */
  refusal(namespace: string, name: string): ClaimFailure {
    const pool = this.#options.pools.get(namespace, name);
    if (pool === undefined || pool.metadata?.deletionTimestamp !== undefined)
      return new ClaimFailure('PoolNotFound', `SandboxWarmPool ${namespace}/${name} not found`);
    const templateName = pool.spec?.sandboxTemplateRef?.name ?? '';
    const template = this.#options.templates.get(namespace, templateName);
    if (template === undefined)
      return new ClaimFailure(
        'NotDriven',
        `SandboxWarmPool ${namespace}/${name}: its SandboxTemplate ${templateName} does not exist`,
      );
    if (!isDriven(template))
      return new ClaimFailure(
        'NotDriven',
        `SandboxWarmPool ${namespace}/${name} is not driven by warmpool: its SandboxTemplate ${templateName} is not annotated warmpool.dev/driver: sandboxd`,
      );
    try {
      poolKeyOf(template);
    } catch (err) {
      if (err instanceof TemplateKeyError)
        return new ClaimFailure('NotDriven', `SandboxWarmPool ${namespace}/${name} cannot be driven: ${err.message}`);
      throw err;
    }
    // Driven, but the caches only just showed it: the next sync creates its Provisioner.
    return new ClaimFailure('Unavailable', `SandboxWarmPool ${namespace}/${name} is being set up; retry shortly`, {
      retryAfterSeconds: 1,
    });
  }

  /** Stops every Provisioner and waits until every enqueued claim has its answer. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const provisioner of this.list()) this.delete(provisioner.namespace, provisioner.name);
    await Promise.allSettled([...this.#stopping]);
  }

  #drivenKey(pool: SandboxWarmPool): PoolKey | undefined {
    const template = this.#options.templates.get(
      pool.metadata?.namespace ?? '',
      pool.spec?.sandboxTemplateRef?.name ?? '',
    );
    if (template === undefined || !isDriven(template)) return undefined;
    try {
      return poolKeyOf(template);
    } catch {
      return undefined;
    }
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
