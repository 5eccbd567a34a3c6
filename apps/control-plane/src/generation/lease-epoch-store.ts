// The epoch record: an annotation on a coordination.k8s.io Lease of its own
// (`<lease-name>-generation`), next to the election Lease. A Lease rather than
// a ConfigMap because the control plane's Role already covers Leases in its
// namespace; a separate object rather than the election Lease so that epoch
// writes never race the elector's renewals or its release on shutdown.
import type { KubeConfig } from '@kubernetes/client-node';
import { isAlreadyExists, isConflict, isNotFound, LeaseType, ResourceClient, retryOnConflict, type Lease } from '@warmpool/kube';
import type { EpochStore } from './generation.js';

export const EPOCH_ANNOTATION = 'warmpool.dev/generation-epoch';

export interface LeaseEpochStoreOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  /** The record's name, e.g. `warmpool-control-plane-generation`. */
  name: string;
  /** Each apiserver call is abandoned after this long (default 10 s). */
  timeoutMs?: number;
}

export class LeaseEpochStore implements EpochStore {
  readonly #leases: ResourceClient<Lease>;
  readonly #namespace: string;
  readonly #name: string;
  readonly #timeoutMs: number;

  constructor(options: LeaseEpochStoreOptions) {
    this.#leases = new ResourceClient<Lease>(options.kubeConfig, LeaseType);
    this.#namespace = options.namespace;
    this.#name = options.name;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
  }

  /** The stored epoch (0 when there is no record yet). */
  async read(signal?: AbortSignal): Promise<number> {
    try {
      return epochIn(await this.#leases.get({ namespace: this.#namespace, name: this.#name }, { signal: this.#signal(signal) }));
    } catch (err) {
      if (isNotFound(err)) return 0;
      throw err;
    }
  }

  advance(minimum: number, signal?: AbortSignal): Promise<number> {
    // Two candidates advancing at once: one write wins, the other re-reads and goes above it.
    return retryOnConflict(async () => {
      let current: Lease | undefined;
      try {
        current = await this.#leases.get({ namespace: this.#namespace, name: this.#name }, { signal: this.#signal(signal) });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      const epoch = Math.max((current === undefined ? 0 : epochIn(current)) + 1, minimum);
      if (current === undefined) {
        await this.#leases.create(
          { metadata: { namespace: this.#namespace, name: this.#name, annotations: { [EPOCH_ANNOTATION]: String(epoch) } }, spec: {} },
          { signal: this.#signal(signal) },
        );
      } else {
        // replace carries the resourceVersion we read: a concurrent writer makes this a 409.
        await this.#leases.replace(
          { ...current, metadata: { ...current.metadata, annotations: { ...current.metadata.annotations, [EPOCH_ANNOTATION]: String(epoch) } } },
          { signal: this.#signal(signal) },
        );
      }
      return epoch;
    }, { steps: 8, factor: 2, retriable: (err) => isConflict(err) || isAlreadyExists(err), ...(signal ? { signal } : {}) });
  }

  #signal(outer: AbortSignal | undefined): AbortSignal {
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    return outer === undefined ? timeout : AbortSignal.any([outer, timeout]);
  }
}

function epochIn(lease: Lease): number {
  const raw = lease.metadata.annotations?.[EPOCH_ANNOTATION];
  const epoch = raw === undefined ? 0 : Number(raw);
  // A hand-edited record that is not a number must not silently restart at 0 below what nodes applied;
  // the 409 path would recover, but refusing loudly is clearer.
  if (!Number.isSafeInteger(epoch) || epoch < 0) throw new Error(`Lease ${lease.metadata.namespace}/${lease.metadata.name}: annotation ${EPOCH_ANNOTATION}=${JSON.stringify(raw)} is not a non-negative integer`);
  return epoch;
}
