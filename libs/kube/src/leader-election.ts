// Leader election on a coordination.k8s.io/v1 Lease with client-go's
// semantics (tools/leaderelection): a candidate takes the lease when it is
// free or expired; the leader renews it every retryPeriod and gives up
// leadership if no renewal succeeds within renewDeadline; every write carries
// the resourceVersion it read, so of two racing candidates one gets 409 and loses.
//
// Expiry is judged on this process's own monotonic clock: we remember when we
// last saw the lease change (its resourceVersion), and a lease is expired once
// leaseDurationSeconds have passed since then without a change. renewTime,
// written by another machine's clock, is never compared with ours, so clock
// skew between candidates does not matter (only clock *rate* does).
import type { KubeConfig } from '@kubernetes/client-node';
import type { KubeObject, ObjectMeta, ResourceType } from '@warmpool/api';
import { jittered, sleep } from './backoff.js';
import { ResourceClient } from './client.js';
import { isNotFound } from './errors.js';
import { errorFields, silentKubeLogger } from './logger.js';
import type { KubeLogger } from './logger.js';

export const LeaseType: ResourceType = {
  group: 'coordination.k8s.io',
  version: 'v1',
  plural: 'leases',
  kind: 'Lease',
  namespaced: true,
};

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  /** MicroTime (RFC 3339 with microseconds). */
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface Lease extends KubeObject {
  metadata: ObjectMeta;
  spec?: LeaseSpec;
}

export interface LeaderElectorOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  /** The Lease's name: one per elected role. */
  name: string;
  /** Unique per candidate (pod name, hostname + random suffix, ...). */
  identity: string;
  /** How long others wait, from the last change they saw, before taking an unrenewed lease (15 s). */
  leaseDurationMs?: number;
  /** The leader steps down if it cannot renew for this long (10 s); must be below leaseDurationMs. */
  renewDeadlineMs?: number;
  /** Between attempts to acquire or renew (2 s). */
  retryPeriodMs?: number;
  /** Called on becoming leader; `signal` aborts when leadership ends. Not awaited. */
  onStartedLeading(signal: AbortSignal): void | Promise<void>;
  /** Called when leadership ends: renewal failed, or close(). */
  onStoppedLeading?(): void;
  /** Called with each new leader's identity as observed (our own included). */
  onNewLeader?(identity: string): void;
  logger?: KubeLogger;
}

export interface CloseOptions {
  /**
   * Default true: clear holderIdentity so a successor takes over at once.
   * false leaves the lease to expire, as a crash would.
   */
  release?: boolean;
}

// client-go's JitterFactor for acquire attempts.
const JITTER_FACTOR = 1.2;

export class LeaderElector {
  readonly #options: LeaderElectorOptions;
  readonly #leases: ResourceClient<Lease>;
  readonly #logger: KubeLogger;
  readonly #leaseDurationMs: number;
  readonly #renewDeadlineMs: number;
  readonly #retryPeriodMs: number;
  readonly #stop = new AbortController();
  #release = true;
  #run: Promise<void> | undefined;
  /** The lease as last read or written, and when (local monotonic ms) it last changed. */
  #observed: Lease | undefined;
  #observedAt = 0;
  #reportedLeader = '';
  #leading: AbortController | undefined;

  constructor(options: LeaderElectorOptions) {
    this.#options = options;
    this.#leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.#renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.#retryPeriodMs = options.retryPeriodMs ?? 2_000;
    if (!options.identity) throw new Error('leader election: identity is required');
    if (this.#leaseDurationMs <= this.#renewDeadlineMs) throw new Error('leader election: leaseDurationMs must be greater than renewDeadlineMs');
    if (this.#renewDeadlineMs <= JITTER_FACTOR * this.#retryPeriodMs) {
      throw new Error(`leader election: renewDeadlineMs must be greater than ${JITTER_FACTOR} * retryPeriodMs`);
    }
    if (this.#retryPeriodMs <= 0) throw new Error('leader election: retryPeriodMs must be positive');
    this.#leases = new ResourceClient<Lease>(options.kubeConfig, LeaseType);
    this.#logger = options.logger ?? silentKubeLogger;
  }

  /** Starts campaigning; after losing leadership it campaigns again until close(). */
  start(): this {
    if (!this.#run && !this.#stop.signal.aborted) {
      this.#run = this.#loop().catch((err: unknown) => {
        this.#logger.error('leader election stopped by an unexpected error', { ...this.#describe(), ...errorFields(err) });
        if (this.#leading) this.#stopLeading();
      });
    }
    return this;
  }

  /** True while the last observed lease names us as holder. */
  isLeader(): boolean {
    return this.#observed?.spec?.holderIdentity === this.#options.identity;
  }

  /** The holder of the lease as last observed ('' when free or not yet read). */
  get leader(): string {
    return this.#observed?.spec?.holderIdentity ?? '';
  }

  /** Stops campaigning or leading; by default releases a held lease first. */
  async close(options: CloseOptions = {}): Promise<void> {
    this.#release = options.release ?? true;
    this.#stop.abort();
    await this.#run;
  }

  async #loop(): Promise<void> {
    const stop = this.#stop.signal;
    while (!stop.aborted) {
      if (!(await this.#acquire())) break;
      this.#startLeading();
      await this.#renewUntilLost();
      if (stop.aborted && this.#release) await this.#releaseLease();
      this.#stopLeading();
    }
  }

  /** Tries every retryPeriod (jittered) until we hold the lease; false if stopped first. */
  async #acquire(): Promise<boolean> {
    const stop = this.#stop.signal;
    while (!stop.aborted) {
      const acquired = await this.#tryAcquireOrRenew(stop);
      this.#reportTransition();
      if (acquired) {
        this.#logger.info('acquired lease', this.#describe());
        return true;
      }
      await sleep(jittered(this.#retryPeriodMs, JITTER_FACTOR), stop);
    }
    return false;
  }

  /** Renews every retryPeriod; returns when a renewal cycle misses renewDeadline, or on close(). */
  async #renewUntilLost(): Promise<void> {
    const stop = this.#stop.signal;
    while (!stop.aborted) {
      await sleep(this.#retryPeriodMs, stop);
      if (stop.aborted) return;
      const deadline = performance.now() + this.#renewDeadlineMs;
      let renewed = false;
      while (!stop.aborted && !renewed) {
        const remaining = deadline - performance.now();
        if (remaining <= 0) break;
        renewed = await this.#tryAcquireOrRenew(AbortSignal.any([stop, AbortSignal.timeout(Math.ceil(remaining))]));
        if (!renewed) await sleep(Math.min(this.#retryPeriodMs, deadline - performance.now()), stop);
      }
      this.#reportTransition();
      if (stop.aborted) return;
      if (!renewed) {
        this.#logger.warn('failed to renew lease within the renew deadline; stepping down', this.#describe());
        return;
      }
    }
  }

  async #tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const now = performance.now();
    const ref = { namespace: this.#options.namespace, name: this.#options.name };
    const stamp = microTime(new Date());
    const durationSeconds = Math.max(1, Math.ceil(this.#leaseDurationMs / 1000));

    // Fast path: the leader writes over the version it last saw without reading first.
    if (this.isLeader() && this.#leaseValid(now) && this.#observed) {
      try {
        const renewed = await this.#leases.replace(withSpec(this.#observed, { renewTime: stamp, leaseDurationSeconds: durationSeconds }), { signal });
        this.#setObserved(renewed);
        return true;
      } catch (err) {
        this.#logger.debug('optimistic renew failed; reading the lease', { ...this.#describe(), ...errorFields(err) });
      }
    }

    let current: Lease;
    try {
      current = await this.#leases.get(ref, { signal });
    } catch (err) {
      if (!isNotFound(err)) {
        this.#logger.warn('cannot read lease', { ...this.#describe(), ...errorFields(err) });
        return false;
      }
      try {
        const created = await this.#leases.create(
          {
            metadata: { namespace: ref.namespace, name: ref.name },
            spec: {
              holderIdentity: this.#options.identity,
              leaseDurationSeconds: durationSeconds,
              acquireTime: stamp,
              renewTime: stamp,
              leaseTransitions: 0,
            },
          },
          { signal },
        );
        this.#setObserved(created);
        return true;
      } catch (createErr) {
        this.#logger.debug('cannot create lease', { ...this.#describe(), ...errorFields(createErr) });
        return false;
      }
    }

    if (current.metadata.resourceVersion !== this.#observed?.metadata.resourceVersion) this.#setObserved(current);
    const holder = current.spec?.holderIdentity ?? '';
    if (holder !== '' && holder !== this.#options.identity && this.#leaseValid(now)) return false;

    const keeping = holder === this.#options.identity;
    const transitions = current.spec?.leaseTransitions ?? 0;
    const next = withSpec(current, {
      holderIdentity: this.#options.identity,
      leaseDurationSeconds: durationSeconds,
      renewTime: stamp,
      acquireTime: keeping ? (current.spec?.acquireTime ?? stamp) : stamp,
      leaseTransitions: keeping ? transitions : transitions + 1,
    });
    try {
      this.#setObserved(await this.#leases.replace(next, { signal }));
      return true;
    } catch (err) {
      // 409: another candidate wrote first; we see its lease on the next try.
      this.#logger.debug('lease update failed', { ...this.#describe(), ...errorFields(err) });
      return false;
    }
  }

  async #releaseLease(): Promise<void> {
    if (!this.isLeader() || !this.#observed) return;
    const stamp = microTime(new Date());
    try {
      const released = await this.#leases.replace(
        withSpec(this.#observed, { holderIdentity: '', leaseDurationSeconds: 1, renewTime: stamp, acquireTime: stamp }),
        { signal: AbortSignal.timeout(this.#renewDeadlineMs) },
      );
      this.#setObserved(released);
      this.#logger.info('released lease', this.#describe());
    } catch (err) {
      this.#logger.warn('failed to release lease', { ...this.#describe(), ...errorFields(err) });
    }
  }

  #leaseValid(now: number): boolean {
    const seconds = this.#observed?.spec?.leaseDurationSeconds ?? this.#leaseDurationMs / 1000;
    return this.#observedAt + seconds * 1000 > now;
  }

  #setObserved(lease: Lease): void {
    this.#observed = lease;
    this.#observedAt = performance.now();
  }

  #reportTransition(): void {
    const holder = this.leader;
    if (holder === this.#reportedLeader) return;
    this.#reportedLeader = holder;
    if (holder !== '') this.#callback('onNewLeader', () => this.#options.onNewLeader?.(holder));
  }

  #startLeading(): void {
    const leading = new AbortController();
    this.#leading = leading;
    this.#callback('onStartedLeading', () => {
      const result = this.#options.onStartedLeading(leading.signal);
      if (result instanceof Promise) {
        result.catch((err: unknown) => this.#logger.error('onStartedLeading failed', { ...this.#describe(), ...errorFields(err) }));
      }
    });
  }

  #stopLeading(): void {
    this.#leading?.abort();
    this.#leading = undefined;
    this.#callback('onStoppedLeading', () => this.#options.onStoppedLeading?.());
  }

  #callback(name: string, call: () => void): void {
    try {
      call();
    } catch (err) {
      this.#logger.error(`${name} threw`, { ...this.#describe(), ...errorFields(err) });
    }
  }

  #describe(): Record<string, unknown> {
    return { lease: `${this.#options.namespace}/${this.#options.name}`, identity: this.#options.identity };
  }
}

function withSpec(lease: Lease, spec: LeaseSpec): Lease {
  return { ...lease, metadata: { ...lease.metadata }, spec: { ...lease.spec, ...spec } };
}

/** Kubernetes MicroTime wants exactly six fractional digits. */
function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
