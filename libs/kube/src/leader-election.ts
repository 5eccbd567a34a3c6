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
//
// The pieces: the Lease record (lease.ts), what we last saw of it and its
// expiry (observed-lease.ts), one acquire-or-renew try (lease-attempt.ts) and
// the release on close (lease-release.ts); this module runs the loop.
//
// Invariants of leading (what makes a paused or partitioned leader harmless):
// - The renew deadline counts from the start of the last renewal that
//   succeeded, not from the start of a renewal cycle: a process paused for
//   longer than renewDeadline is no longer leading the moment it resumes
//   (holding() is false, and the renew loop steps down on its first tick).
//   Since renewDeadline < leaseDuration, it stops before a standby, counting
//   leaseDuration from the last change it saw (after our write), may take over.
// - Seeing another valid holder ends leadership at once.
// - updateHeld() writes the election Lease itself, with the resourceVersion of
//   a read that showed us as holder: the apiserver applies it only if nobody
//   wrote the Lease since, so it succeeds only while we hold it. This is the
//   one atomic check-and-write the apiserver offers (a precondition on one
//   object); a write to any other object could not be conditional on who
//   holds this one.
import type { KubeConfig } from './kubeconfig/kubeconfig.js';
import { jittered, sleep } from './backoff.js';
import { ResourceClient } from './client.js';
import { isConflict } from './errors.js';
import { tryAcquireOrRenew, type Attempt, type LeaseSeat } from './lease-attempt.js';
import { releaseLease } from './lease-release.js';
import { LeaseType, type Lease } from './lease.js';
import { errorFields, silentKubeLogger } from './logger.js';
import type { KubeLogger } from './logger.js';
import { ObservedLease } from './observed-lease.js';

export { LeaseType, type Lease, type LeaseSpec } from './lease.js';

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
  /** Called when leadership ends: renewal failed, another holder seen, or close(). */
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

/** updateHeld() was refused: this replica does not hold the Lease (any more). */
export class NotLeaderError extends Error {
  override name = 'NotLeaderError';
}

export class LeaderElector {
  readonly #options: LeaderElectorOptions;
  readonly #leases: ResourceClient<Lease>;
  readonly #seat: LeaseSeat;
  readonly #logger: KubeLogger;
  readonly #leaseDurationMs: number;
  readonly #renewDeadlineMs: number;
  readonly #retryPeriodMs: number;
  readonly #stop = new AbortController();
  #release = true;
  #run: Promise<void> | undefined;
  /** The lease as last read or written, and when (local monotonic ms) it last changed. */
  readonly #observed: ObservedLease;
  #reportedLeader = '';
  #leading: AbortController | undefined;
  /** Local monotonic ms when the last successful acquire or renewal was sent. */
  #renewedAt = Number.NEGATIVE_INFINITY;

  constructor(options: LeaderElectorOptions) {
    this.#options = options;
    this.#leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.#renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.#retryPeriodMs = options.retryPeriodMs ?? 2_000;
    if (!options.identity) throw new Error('leader election: identity is required');
    if (this.#leaseDurationMs <= this.#renewDeadlineMs)
      throw new Error('leader election: leaseDurationMs must be greater than renewDeadlineMs');
    if (this.#renewDeadlineMs <= JITTER_FACTOR * this.#retryPeriodMs) {
      throw new Error(`leader election: renewDeadlineMs must be greater than ${JITTER_FACTOR} * retryPeriodMs`);
    }
    if (this.#retryPeriodMs <= 0) throw new Error('leader election: retryPeriodMs must be positive');
    this.#leases = new ResourceClient<Lease>(options.kubeConfig, LeaseType);
    this.#logger = options.logger ?? silentKubeLogger;
    this.#observed = new ObservedLease(this.#leaseDurationMs);
    this.#seat = {
      leases: this.#leases,
      ref: { namespace: options.namespace, name: options.name },
      identity: options.identity,
      leaseDurationMs: this.#leaseDurationMs,
      observed: this.#observed,
      held: (at) => {
        this.#renewedAt = at;
      },
      logger: this.#logger,
      describe: () => this.#describe(),
    };
  }

  /** Starts campaigning; after losing leadership it campaigns again until close(). */
  start(): this {
    if (!this.#run && !this.#stop.signal.aborted) {
      this.#run = this.#loop().catch((err: unknown) => {
        this.#logger.error('leader election stopped by an unexpected error', {
          ...this.#describe(),
          ...errorFields(err),
        });
        if (this.#leading) this.#stopLeading();
      });
    }
    return this;
  }

  /** True while the last observed lease names us as holder. */
  isLeader(): boolean {
    return this.#observed.holder === this.#options.identity;
  }

  /**
   * True while leading and within renewDeadline of the last successful
   * renewal: what a leader checks right before acting on its leadership.
   */
  holding(): boolean {
    return (
      this.#leading !== undefined &&
      !this.#leading.signal.aborted &&
      this.isLeader() &&
      performance.now() < this.#renewedAt + this.#renewDeadlineMs
    );
  }

  /**
   * Re-reads the Lease: true while it still names us and holding() holds.
   * Another holder (or a lapsed deadline) ends leadership at once.
   */
  async confirm(signal?: AbortSignal): Promise<boolean> {
    if (!this.holding()) {
      this.#depose('the renew deadline has passed since the last successful renewal');
      return false;
    }
    let current: Lease;
    try {
      current = await this.#leases.get(
        { namespace: this.#options.namespace, name: this.#options.name },
        { signal: this.#signalFor(signal) },
      );
    } catch (err) {
      // Unknown: the renew loop decides by the deadline.
      this.#logger.warn('cannot re-read the lease to confirm leadership', { ...this.#describe(), ...errorFields(err) });
      return this.holding();
    }
    this.#observed.noteRead(current);
    if (current.spec?.holderIdentity !== this.#options.identity) {
      this.#depose(`the lease is held by ${JSON.stringify(current.spec?.holderIdentity ?? '')}`);
      return false;
    }
    return this.holding();
  }

  /**
   * Writes the election Lease while we hold it: `mutate` gets the Lease as
   * just read (holder checked) and returns what to write; the write carries
   * that read's resourceVersion, so it lands only if nobody wrote the Lease
   * in between. Our own renewals racing it are retried; another holder
   * throws NotLeaderError and ends leadership at once.
   */
  async updateHeld(mutate: (lease: Lease) => Lease, signal?: AbortSignal): Promise<Lease> {
    const ref = { namespace: this.#options.namespace, name: this.#options.name };
    for (let attempt = 1; ; attempt++) {
      if (!this.holding())
        throw new NotLeaderError(`${this.#options.identity} is not leading (or its renew deadline has passed)`);
      const current = await this.#leases.get(ref, { signal: this.#signalFor(signal) });
      this.#observed.noteRead(current);
      if (current.spec?.holderIdentity !== this.#options.identity) {
        const holder = current.spec?.holderIdentity ?? '';
        this.#depose(`the lease is held by ${JSON.stringify(holder)}`);
        throw new NotLeaderError(
          `the lease ${ref.namespace}/${ref.name} is held by ${JSON.stringify(holder)}, not ${this.#options.identity}`,
        );
      }
      // Checked again after the read: a pause during it must not let a lapsed leader write.
      if (!this.holding())
        throw new NotLeaderError(`${this.#options.identity} is not leading (or its renew deadline has passed)`);
      const next = mutate(current);
      try {
        const written = await this.#leases.replace(
          { ...next, metadata: { ...next.metadata, resourceVersion: current.metadata.resourceVersion } },
          { signal: this.#signalFor(signal) },
        );
        this.#observed.set(written);
        return written;
      } catch (err) {
        // A 409 is most often our own renewal landing first; read again and re-check the holder.
        if (!isConflict(err) || attempt >= 8) throw err;
      }
    }
  }

  /** The holder of the lease as last observed ('' when free or not yet read). */
  get leader(): string {
    return this.#observed.holder;
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
      const leading = this.#startLeading();
      await this.#renewUntilLost(leading);
      if (stop.aborted && this.#release && !leading.aborted) await releaseLease(this.#seat, this.#renewDeadlineMs);
      this.#stopLeading();
    }
  }

  /** Tries every retryPeriod (jittered) until we hold the lease; false if stopped first. */
  async #acquire(): Promise<boolean> {
    const stop = this.#stop.signal;
    while (!stop.aborted) {
      const acquired = (await tryAcquireOrRenew(this.#seat, stop)) === 'held';
      this.#reportTransition();
      if (acquired) {
        this.#logger.info('acquired lease', this.#describe());
        return true;
      }
      await sleep(jittered(this.#retryPeriodMs, JITTER_FACTOR), stop);
    }
    return false;
  }

  /**
   * Renews every retryPeriod; returns on close(), when renewDeadline has
   * passed since the last successful renewal, when another holder is seen, or
   * when something else deposed us (`leading` aborted).
   */
  async #renewUntilLost(leading: AbortSignal): Promise<void> {
    const stop = this.#stop.signal;
    const either = AbortSignal.any([stop, leading]);
    while (!either.aborted) {
      await sleep(this.#retryPeriodMs, either);
      let outcome: Attempt = 'failed';
      while (!either.aborted && outcome === 'failed') {
        const remaining = this.#renewedAt + this.#renewDeadlineMs - performance.now();
        if (remaining <= 0) break;
        outcome = await tryAcquireOrRenew(
          this.#seat,
          AbortSignal.any([either, AbortSignal.timeout(Math.ceil(remaining))]),
        );
        if (outcome === 'failed')
          await sleep(
            Math.min(this.#retryPeriodMs, this.#renewedAt + this.#renewDeadlineMs - performance.now()),
            either,
          );
      }
      this.#reportTransition();
      if (either.aborted) return;
      if (outcome === 'other-holder') {
        this.#depose(`the lease is held by ${JSON.stringify(this.leader)}`);
        return;
      }
      if (outcome === 'failed') {
        this.#depose('no renewal succeeded within the renew deadline');
        return;
      }
    }
  }

  #signalFor(outer: AbortSignal | undefined): AbortSignal {
    const timeout = AbortSignal.timeout(this.#renewDeadlineMs);
    return outer === undefined ? timeout : AbortSignal.any([outer, timeout]);
  }

  /** Ends leadership now (the renew loop then reports it through onStoppedLeading). */
  #depose(why: string): void {
    const leading = this.#leading;
    if (leading === undefined || leading.signal.aborted) return;
    this.#logger.warn('stepping down', { ...this.#describe(), why });
    leading.abort(new NotLeaderError(why));
  }

  #reportTransition(): void {
    const holder = this.leader;
    if (holder === this.#reportedLeader) return;
    this.#reportedLeader = holder;
    if (holder !== '') this.#callback('onNewLeader', () => this.#options.onNewLeader?.(holder));
  }

  #startLeading(): AbortSignal {
    const leading = new AbortController();
    this.#leading = leading;
    this.#callback('onStartedLeading', () => {
      const result = this.#options.onStartedLeading(leading.signal);
      if (result instanceof Promise) {
        result.catch((err: unknown) =>
          this.#logger.error('onStartedLeading failed', { ...this.#describe(), ...errorFields(err) }),
        );
      }
    });
    return leading.signal;
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
