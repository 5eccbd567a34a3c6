// The election Lease as this process last saw it, and whether it is still
// valid by this process's own monotonic clock: a lease is expired once its
// leaseDurationSeconds have passed since we last saw it change (its
// resourceVersion). renewTime, written by another machine's clock, is never
// compared with ours.
import type { Lease } from './lease.js';

export class ObservedLease {
  readonly #defaultDurationMs: number;
  #lease: Lease | undefined;
  /** Local monotonic ms when the lease last changed. */
  #changedAt = 0;

  /** `defaultDurationMs` judges a lease that names no duration. */
  constructor(defaultDurationMs: number) {
    this.#defaultDurationMs = defaultDurationMs;
  }

  /** The lease as last read or written; undefined before the first. */
  get lease(): Lease | undefined {
    return this.#lease;
  }

  /** Its holder ('' when free or not yet read). */
  get holder(): string {
    return this.#lease?.spec?.holderIdentity ?? '';
  }

  /** A write of ours (or a read known to be new): the expiry clock restarts. */
  set(lease: Lease): void {
    this.#lease = lease;
    this.#changedAt = performance.now();
  }

  /** A read: the expiry clock restarts only when the lease changed. */
  noteRead(lease: Lease): void {
    if (lease.metadata.resourceVersion !== this.#lease?.metadata.resourceVersion) this.set(lease);
  }

  /** True while, at local monotonic `now`, the lease's duration has not passed since it last changed. */
  validAt(now: number): boolean {
    const seconds = this.#lease?.spec?.leaseDurationSeconds ?? this.#defaultDurationMs / 1000;
    return this.#changedAt + seconds * 1000 > now;
  }
}
