// The SandboxClaim controller (leader only): a claim of a driven pool goes through the claim pipeline (door 'crd',
// claimRef = its name, so its node records `crd:<namespace>/<name>/<uid>`), then two writes: its Secret (the
// token), then Ready=True Claimed, which also marks it served. No finalizer (docs/crds.md, "SandboxClaim").
// Invariants:
// - A deleted claim never leaks its sandbox: its deletion enqueues its key, which runs after the serve in flight
//   and releases the sandbox; a claim deleted while no leader ran is the janitor's. A crash between the node claim
//   and Ready is covered by the claimRef: the next attempt gets the same sandbox.
// - The token goes only into the claim's own Secret (owned by its uid), deleted with the sandbox's release; a
//   namesake's or a user's Secret is never touched.
// - Ready=True lands only on the claim it was computed for (the write carries its resourceVersion), after its Secret.
// - Claims an earlier version served keep its finalizer until #finalize lifts it after the release.
import type { ClaimFailureReason, SandboxClaim } from '@warmpool/api';
import { WorkQueue, type Lister, type WorkOutcome } from '@warmpool/kube';
import type { Logger, Clock } from '@warmpool/runtime';
import { ClaimFailure, type ClaimGrant, type ClaimScope, type ClaimService } from '../../provisioning/claim-service.js';
import { isExpired, renewalAt, shutdownAt, ttlSecondsFor } from './lifetime.js';
import type { SandboxClaimMetrics } from './metrics.js';
import { hasFinalizer, isServed, ownershipOf, type ClaimCaches } from './ownership.js';
import { claimedStatus, failedStatus, isReadyClaimed, isRetryable, readyOf, statusDiffers } from './status.js';
import { SecretTakenError, type ClaimWriter } from './writer.js';
export interface SandboxClaimSettings {
  /** Lease of a sandbox whose claim has no shutdownTime, renewed at half (default 1 h). */
  leaseSeconds: number;
  /** Claims worked on at once; most of them wait on their batch (default 1 024). */
  concurrency: number;
  /** Backoff of a retryable failure (NoCapacity, NodeRefused, Unavailable, Timeout). */
  retryInitialMs: number;
  retryMaxMs: number;
  /**
   * A claim addressed to warmpool whose pool is missing or undriven is looked at again this often (pool events also
   * wake it).
   */
  unservableRecheckMs: number;
}

export const SANDBOX_CLAIM_DEFAULTS: SandboxClaimSettings = {
  leaseSeconds: 3_600,
  concurrency: 1_024,
  retryInitialMs: 250,
  retryMaxMs: 10_000,
  unservableRecheckMs: 30_000,
};

export interface SandboxClaimControllerOptions extends Partial<SandboxClaimSettings> {
  claims: ClaimService;
  cache: Lister<SandboxClaim>;
  caches: ClaimCaches;
  writer: ClaimWriter;
  metrics: SandboxClaimMetrics;
  logger: Logger;
  clock: Clock;
}

function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf('/');
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

export class SandboxClaimController {
  readonly settings: SandboxClaimSettings;
  readonly #options: SandboxClaimControllerOptions;
  readonly #queue: WorkQueue;
  /**
   * The leases this replica granted or renewed during its term, by key: what
   * it renews by, and proof that it wrote the claim's Secret and status itself
   * (so a watch event that arrives before its own status write is not taken
   * for a status that needs repair).
   */
  readonly #leases = new Map<string, { uid: string; deadline: number }>();
  /**
   * Claims this replica refused for good (BadRequest) at a generation: the
   * watch may still show them marked as served for a moment after the
   * refusal, and such a stale view must not be acted on.
   */
  readonly #refused = new Map<string, { uid: string; generation: number | undefined }>();
  /** When each claim not yet answered was first seen (performance.now()), for the ready-latency histogram. */
  readonly #seen = new Map<string, number>();

  constructor(options: SandboxClaimControllerOptions) {
    this.#options = options;
    this.settings = {
      leaseSeconds: options.leaseSeconds ?? SANDBOX_CLAIM_DEFAULTS.leaseSeconds,
      concurrency: options.concurrency ?? SANDBOX_CLAIM_DEFAULTS.concurrency,
      retryInitialMs: options.retryInitialMs ?? SANDBOX_CLAIM_DEFAULTS.retryInitialMs,
      retryMaxMs: options.retryMaxMs ?? SANDBOX_CLAIM_DEFAULTS.retryMaxMs,
      unservableRecheckMs: options.unservableRecheckMs ?? SANDBOX_CLAIM_DEFAULTS.unservableRecheckMs,
    };
    this.#queue = new WorkQueue({
      concurrency: this.settings.concurrency,
      retryInitialMs: this.settings.retryInitialMs,
      retryMaxMs: this.settings.retryMaxMs,
      work: async (key) => {
        try {
          return await this.reconcile(key);
        } finally {
          options.metrics.queueSize(this.#queue.size);
        }
      },
      onError: (key, err) =>
        options.logger.warn('SandboxClaim reconcile failed; retrying with backoff', { claim: key, err }),
    });
  }

  get running(): boolean {
    return this.#queue.running;
  }

  /** Starts working (on becoming leader): every cached claim is looked at once. */
  start(): void {
    this.#queue.start();
    for (const claim of this.#options.cache.list()) this.enqueue(claim);
  }

  /** Stops taking work (leadership lost, or closing); waits for the claims being worked on. */
  async stop(): Promise<void> {
    await this.#queue.stop();
    this.#leases.clear();
    this.#seen.clear();
    this.#refused.clear();
  }

  enqueue(claim: SandboxClaim): void {
    const { namespace, name } = claim.metadata;
    if (namespace === undefined || name === undefined) return;
    const key = `${namespace}/${name}`;
    if (!this.#seen.has(key) && !isServed(claim)) this.#seen.set(key, performance.now());
    this.#queue.add(key);
  }

  /** Every claim of a namespace that refers to one of `pools` (a pool or its template changed). */
  enqueuePoolClaims(namespace: string, pools: ReadonlySet<string>): void {
    if (!this.running) return;
    for (const claim of this.#options.cache.list(namespace)) {
      if (pools.has(claim.spec?.warmPoolRef?.name ?? '')) this.enqueue(claim);
    }
  }

  /** One claim, from the cache; what to do next with its key. */
  async reconcile(key: string): Promise<WorkOutcome> {
    const { namespace, name } = splitKey(key);
    const claim = this.#options.cache.get(namespace, name);
    if (claim === undefined) {
      // Gone: what it held goes now (nothing is left after #finalize of an earlier version's claim). A leader that never
      // saw the deletion leaves it to the janitor.
      this.#seen.delete(key);
      this.#refused.delete(key);
      this.#leases.delete(key);
      // Only the SandboxClaim key space: an HTTP claim of the same name is never this claim's.
      await this.#release(key, 'deleted');
      await this.#options.writer.deleteOrphanSecret(namespace, name);
      return { kind: 'done' };
    }
    const refused = this.#refused.get(key);
    if (
      refused !== undefined &&
      refused.uid === claim.metadata.uid &&
      refused.generation === claim.metadata.generation &&
      claim.metadata.deletionTimestamp === undefined
    ) {
      return { kind: 'done' };
    }
    if (claim.metadata.deletionTimestamp !== undefined)
      return hasFinalizer(claim) ? this.#finalize(key, claim) : this.#vanished(key, claim, 'deleted');
    const ownership = ownershipOf(claim, this.#options.caches);
    if (ownership.kind === 'not-ours') {
      this.#seen.delete(key);
      return { kind: 'done' };
    }

    const now = this.#options.clock.now();
    const shutdown = shutdownAt(claim);
    // Served: it says so (Ready=True Claimed, or an earlier version's annotation), or this replica wrote that in its
    // term and the cache has not caught up yet.
    const served = isServed(claim) || this.#leases.get(key)?.uid === claim.metadata.uid;
    // Terminal: an expired claim stays so; a refused one until its spec changes.
    const ready = readyOf(claim);
    if (ready?.reason === 'Expired') return { kind: 'done' };
    if (ready?.reason === 'BadRequest' && !served && ready.observedGeneration === claim.metadata.generation)
      return { kind: 'done' };
    if (isExpired(shutdown, now))
      return this.#expire(key, claim, 'spec.lifecycle.shutdownTime has passed: the node reaped the sandbox');
    if (served) return this.#maintain(key, claim, shutdown, now);
    if (ownership.kind === 'unservable') {
      if (await this.#fail(claim, ownership.reason, ownership.message, now))
        this.#options.metrics.failed(ownership.reason);
      return { kind: 'after', ms: this.settings.unservableRecheckMs };
    }
    return this.#serve(key, claim, ownership.pool, shutdown, now);
  }

  async #serve(
    key: string,
    claim: SandboxClaim,
    warmPool: string,
    shutdown: number | undefined,
    now: number,
  ): Promise<WorkOutcome> {
    const { metrics, writer } = this.#options;
    const namespace = claim.metadata.namespace ?? '';
    const name = claim.metadata.name ?? '';
    let grant: ClaimGrant;
    try {
      grant = await this.#options.claims.claim({
        namespace,
        warmPool,
        claimRef: name,
        ttlSeconds: ttlSecondsFor(shutdown, now, this.settings.leaseSeconds),
        owner: { door: 'crd', uid: claim.metadata.uid ?? '' },
      });
    } catch (err) {
      if (!(err instanceof ClaimFailure)) throw err;
      metrics.failed(err.reason);
      await this.#fail(claim, err.reason, err.message, this.#options.clock.now());
      if (isRetryable(err.reason))
        return {
          kind: 'retry',
          ...(err.retryAfterSeconds !== undefined
            ? { minMs: Math.min(err.retryAfterSeconds * 1000, this.settings.retryMaxMs) }
            : {}),
        };
      if (err.reason === 'PoolNotFound' || err.reason === 'NotDriven')
        return { kind: 'after', ms: this.settings.unservableRecheckMs };
      return { kind: 'done' };
    }

    // The claim may have been deleted (or replaced by a namesake) while its batch ran: it gets no Secret then.
    const current = this.#options.cache.get(namespace, name);
    if (current === undefined || current.metadata.uid !== claim.metadata.uid) {
      await this.#release(key, 'vanished');
      return { kind: 'done' };
    }
    // Being deleted: the sandbox goes back at once (and an earlier version's finalizer is lifted once it has).
    if (current.metadata.deletionTimestamp !== undefined)
      return hasFinalizer(current) ? this.#finalize(key, current) : this.#vanished(key, claim);
    // The Secret, then Ready (the two writes on the way to Ready): a client that sees Ready finds its Secret. A claim
    // deleted or replaced meanwhile gets no Ready (the write carries the claim's resourceVersion), its sandbox back and
    // the Secret just written for it deleted; one the cache still showed when the Secret was written is cleaned up the
    // same way when its deletion runs after this serve.
    try {
      await writer.ensureSecret(claim, grant);
    } catch (err) {
      if (!(err instanceof SecretTakenError)) throw err; // retried: the same claimRef gets the same sandbox
      // Not ours to overwrite: hand the sandbox back and say why (until its spec changes).
      this.#refuse(key, claim);
      await this.#release(key, 'vanished');
      await this.#fail(claim, 'BadRequest', err.message, this.#options.clock.now());
      return { kind: 'done' };
    }
    const written = this.#options.clock.now();
    if ((await writer.writeStatusOf(current, (c) => claimedStatus(c, grant, written))) === 'gone')
      return this.#vanished(key, claim);
    const seen = this.#seen.get(key);
    this.#seen.delete(key);
    metrics.claimed(seen === undefined ? undefined : (performance.now() - seen) / 1000);
    const deadline = Date.parse(grant.deadline);
    this.#leases.set(key, { uid: claim.metadata.uid ?? '', deadline });
    this.#options.logger.debug('SandboxClaim served', {
      claim: key,
      sandbox: grant.id,
      node: grant.node,
      tier: grant.tier,
    });
    return this.#next(deadline, shutdown, written);
  }

  /** A served claim: renew its lease when due; repair what a crash between the writes left out. */
  async #maintain(key: string, claim: SandboxClaim, shutdown: number | undefined, now: number): Promise<WorkOutcome> {
    const { claims, writer } = this.#options;
    const namespace = claim.metadata.namespace ?? '';
    const name = claim.metadata.name ?? '';
    const lease = this.#leases.get(key);
    let deadline = lease !== undefined && lease.uid === claim.metadata.uid ? lease.deadline : undefined;
    if (deadline === undefined) {
      // After a restart or a leader change, or with the status write lost: ask the shared index.
      const grant = await claims.lookup(crdScope(namespace), name);
      if (grant === undefined || grant.owner !== claim.metadata.uid)
        return this.#expire(key, claim, 'the sandbox is gone: its lease ran out or its node lost it');
      if (!isReadyClaimed(claim)) {
        await writer.ensureSecret(claim, grant);
        // Deleted or replaced meanwhile: its events bring the key back, and that reconcile releases what it held.
        if ((await writer.writeStatusOf(claim, (c) => claimedStatus(c, grant, now))) === 'gone')
          return { kind: 'done' };
      }
      deadline = Date.parse(grant.deadline);
      this.#leases.set(key, { uid: claim.metadata.uid ?? '', deadline });
    }
    const renewal = renewalAt(deadline, shutdown, now, this.settings.leaseSeconds);
    if (renewal !== undefined && renewal <= now) {
      let granted: string;
      try {
        ({ deadline: granted } = await claims.renew(
          crdScope(namespace),
          name,
          ttlSecondsFor(shutdown, now, this.settings.leaseSeconds),
        ));
      } catch (err) {
        if (err instanceof ClaimFailure && err.reason === 'ClaimNotFound') {
          this.#options.metrics.renewed('gone');
          return this.#expire(key, claim, 'the sandbox is gone: its lease ran out or its node lost it');
        }
        this.#options.metrics.renewed('error');
        throw err;
      }
      this.#options.metrics.renewed('ok');
      deadline = Date.parse(granted);
      this.#leases.set(key, { uid: claim.metadata.uid ?? '', deadline });
      const grant = await claims.lookup(crdScope(namespace), name);
      if (grant !== undefined) await writer.updateSecretDeadline(claim, grant, granted);
    }
    return this.#next(deadline, shutdown, now);
  }

  /** When to look at a served claim again: its renewal, or its shutdownTime (to turn it Expired). */
  #next(deadline: number, shutdown: number | undefined, now: number): WorkOutcome {
    const renewal = renewalAt(deadline, shutdown, now, this.settings.leaseSeconds);
    const at = Math.min(renewal ?? Infinity, shutdown ?? Infinity);
    if (at === Infinity) return { kind: 'done' };
    // A little after the shutdownTime, so the node has reaped by then.
    return { kind: 'after', ms: Math.max(0, at - now) + (at === shutdown ? 250 : 0) };
  }

  async #expire(key: string, claim: SandboxClaim, message: string): Promise<WorkOutcome> {
    await this.#release(key, 'expired');
    await this.#options.writer.deleteSecret(claim);
    const now = this.#options.clock.now();
    await this.#fail(claim, 'Expired', message, now);
    const policy = claim.spec?.lifecycle?.shutdownPolicy;
    if (policy === 'Delete' || policy === 'DeleteForeground') await this.#options.writer.deleteClaim(claim, policy);
    return { kind: 'done' };
  }

  async #finalize(key: string, claim: SandboxClaim): Promise<WorkOutcome> {
    if (!hasFinalizer(claim)) return { kind: 'done' };
    await this.#release(key, 'deleted');
    await this.#options.writer.deleteSecret(claim);
    await this.#options.writer.removeFinalizer(claim);
    return { kind: 'done' };
  }

  /**
   * The claim is being deleted (without an earlier version's finalizer), or vanished or was replaced while its sandbox
   * was being claimed: the sandbox goes back, and the Secret written for this claim goes with it.
   */
  async #vanished(key: string, claim: SandboxClaim, cause: 'deleted' | 'vanished' = 'vanished'): Promise<WorkOutcome> {
    await this.#release(key, cause);
    await this.#options.writer.deleteSecret(claim);
    return { kind: 'done' };
  }

  /**
   * Releases the sandbox held under the key's name in the SandboxClaim key space, if any (never an HTTP claim of the
   * same name); whether one was released is counted and logged.
   */
  async #release(key: string, cause: 'deleted' | 'vanished' | 'expired'): Promise<void> {
    const { namespace, name } = splitKey(key);
    const released = await this.#options.claims.release(crdScope(namespace), name);
    this.#leases.delete(key);
    if (released) {
      this.#options.metrics.released(cause);
      this.#options.logger.debug('SandboxClaim sandbox released', { claim: key, cause });
    }
  }

  #refuse(key: string, claim: SandboxClaim): void {
    this.#refused.set(key, { uid: claim.metadata.uid ?? '', generation: claim.metadata.generation });
    this.#seen.delete(key);
  }

  /** Writes Ready=False unless the claim already says so (nothing onto a claim deleted or replaced); whether it wrote. */
  async #fail(claim: SandboxClaim, reason: ClaimFailureReason, message: string, now: number): Promise<boolean> {
    if (!statusDiffers(claim, failedStatus(claim, reason, message, now))) return false;
    const written = await this.#options.writer.writeStatusOf(claim, (c) => failedStatus(c, reason, message, now));
    return written === 'written';
  }
}

/** A SandboxClaim's sandbox is found only in the SandboxClaim key space: never an HTTP or a peer's claim. */
function crdScope(namespace: string): ClaimScope {
  return { namespace, door: 'crd' };
}
