// The epoch record: an annotation on the election Lease itself, written only
// through LeaderElector.updateHeld(), i.e. with the resourceVersion of a read
// that showed this replica as the holder.
//
// Invariant (the fence): an epoch is stored only by a replica that held the
// election Lease at the instant of the write. The apiserver's one atomic
// check-and-write is a resourceVersion precondition on a single object, so
// the epoch has to live on the object whose holder it depends on: a write to
// a separate record could land after its writer lost the Lease. Every holder
// change is itself a write of the Lease, so a holder taking over reads the
// epoch its predecessor stored, and stores one above it; a deposed leader's
// write fails (409 or another holder), so it can never take an epoch above
// its successor's, and every agent that applied the successor's push refuses
// the deposed leader's for good.
//
// A holder may resume the epoch it stored for its own previous term while the
// Lease still records it (generation.ts says why that is safe): the one
// read-with-holder check is the same, and nothing is written. "Still" means on
// the same Lease object (its uid): a Lease deleted and re-created may record
// the same number again, taken there by another replica from the nodes' floor.
//
// Epochs stored before this lived on a Lease of their own,
// `<lease-name>-generation`; it is read (never written) so that an upgrade
// keeps generations growing.
import {
  isAlreadyExists,
  isConflict,
  ignoreNotFound,
  LeaseType,
  ResourceClient,
  retryOnConflict,
  type Lease,
  type KubeConfig,
} from '@warmpool/kube';
import { GenerationExhaustedError, MAX_EPOCH, type EpochStore } from './generation.js';

export const EPOCH_ANNOTATION = 'warmpool.dev/generation-epoch';

/** The election Lease as its holder may write it (LeaderElector implements this). */
export interface HeldLease {
  updateHeld(mutate: (lease: Lease) => Lease, signal?: AbortSignal): Promise<Lease>;
}

export interface LeaseEpochStoreOptions {
  /** The election, through which the epoch is written onto its Lease. */
  lease: HeldLease;
  kubeConfig: KubeConfig;
  namespace: string;
  /** The record of earlier versions, read once for the upgrade (e.g. `warmpool-control-plane-generation`). */
  legacyName?: string;
  /** Each apiserver call is abandoned after this long (default 10 s). */
  timeoutMs?: number;
}

export class LeaseEpochStore implements EpochStore {
  readonly #options: LeaseEpochStoreOptions;
  readonly #leases: ResourceClient<Lease>;
  readonly #timeoutMs: number;
  /** The legacy record's epoch (0: none), once read: it is never written again, so once is enough. */
  #legacy: number | undefined;
  /** The epoch this store last handed out and the uid of the Lease it read it on: the only one it may resume. */
  #handedOut: { epoch: number; uid: string | undefined } | undefined;

  constructor(options: LeaseEpochStoreOptions) {
    this.#options = options;
    this.#leases = new ResourceClient<Lease>(options.kubeConfig, LeaseType);
    this.#timeoutMs = options.timeoutMs ?? 10_000;
  }

  async advance(minimum: number, signal?: AbortSignal, unrecordedFloor?: number, resumable?: number): Promise<number> {
    const legacy = await this.#legacyEpoch(signal);
    let result: { epoch: number; uid: string | undefined } | undefined;
    await this.#options.lease.updateHeld((lease) => {
      const recorded = epochIn(lease);
      const stored = Math.max(recorded ?? 0, legacy);
      const uid = lease.metadata.uid;
      // Still the epoch the caller's previous term used, on the same Lease: nobody took one since (a term takes one
      // before it pushes, and only a holder writes it). The Lease goes back unchanged, which the apiserver does not
      // store.
      if (
        resumable !== undefined &&
        recorded === resumable &&
        stored === resumable &&
        uid !== undefined &&
        this.#handedOut?.epoch === resumable &&
        this.#handedOut.uid === uid
      ) {
        result = { epoch: resumable, uid };
        return lease;
      }
      // The nodes' floor only where the Lease holds no epoch (deleted and re-created, or before the first):
      // a recorded one bounds every generation issued, so a forged number cannot move it.
      const epoch = Math.max(stored + 1, minimum, recorded === undefined ? (unrecordedFloor ?? 0) : 0);
      // Thrown out of updateHeld() before anything is written.
      if (epoch > MAX_EPOCH)
        throw new GenerationExhaustedError(`no epoch left above the stored ${stored} (at most ${MAX_EPOCH})`);
      result = { epoch, uid };
      return {
        ...lease,
        metadata: {
          ...lease.metadata,
          annotations: { ...lease.metadata.annotations, [EPOCH_ANNOTATION]: String(epoch) },
        },
      };
    }, signal);
    if (result === undefined) throw new Error('the election Lease was not written');
    this.#handedOut = result;
    return result.epoch;
  }

  async #legacyEpoch(signal: AbortSignal | undefined): Promise<number> {
    const name = this.#options.legacyName;
    if (name === undefined) return 0;
    if (this.#legacy !== undefined) return this.#legacy;
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const lease = await ignoreNotFound(
      this.#leases.get(
        { namespace: this.#options.namespace, name },
        { signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]) },
      ),
    );
    this.#legacy = (lease === undefined ? undefined : epochIn(lease)) ?? 0;
    return this.#legacy;
  }
}

/**
 * The Lease written without an election, for a replica that is alone by
 * construction (leaderElection: false): read-modify-write with its
 * resourceVersion, creating it when missing. It fences nothing.
 */
export class UnelectedLease implements HeldLease {
  readonly #leases: ResourceClient<Lease>;
  readonly #ref: { namespace: string; name: string };

  constructor(kubeConfig: KubeConfig, namespace: string, name: string) {
    this.#leases = new ResourceClient<Lease>(kubeConfig, LeaseType);
    this.#ref = { namespace, name };
  }

  updateHeld(mutate: (lease: Lease) => Lease, signal?: AbortSignal): Promise<Lease> {
    return retryOnConflict(
      async () => {
        const current = await ignoreNotFound(this.#leases.get(this.#ref, signal ? { signal } : {}));
        if (current === undefined)
          return this.#leases.create(mutate({ metadata: { ...this.#ref }, spec: {} }), signal ? { signal } : {});
        return this.#leases.replace(mutate(current), signal ? { signal } : {});
      },
      {
        steps: 8,
        factor: 2,
        retriable: (err) => isConflict(err) || isAlreadyExists(err),
        ...(signal ? { signal } : {}),
      },
    );
  }
}

/** The epoch stored on a Lease; undefined when there is none. */
export function epochIn(lease: Lease): number | undefined {
  const raw = lease.metadata.annotations?.[EPOCH_ANNOTATION];
  if (raw === undefined) return undefined;
  const epoch = Number(raw);
  // A hand-edited record that is not a number must not silently restart at 0 below what nodes applied.
  if (raw.trim() === '' || !Number.isSafeInteger(epoch) || epoch < 0)
    throw new Error(
      `Lease ${lease.metadata.namespace}/${lease.metadata.name}: annotation ${EPOCH_ANNOTATION}=${JSON.stringify(raw)} is not a non-negative integer`,
    );
  return epoch;
}
